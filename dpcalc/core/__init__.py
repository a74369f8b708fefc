"""Pure numeric core: numpy/scipy functions that broadcast over array arguments.

One module per concept (gaussian, laplace, gdp, rdp, zcdp, composition,
amplification, group, sgd, solve). No click, no rich, no printing, no global
state. Invalid parameters raise :class:`ValueError` naming the parameter.
"""
