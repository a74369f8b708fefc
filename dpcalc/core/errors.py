"""The core's one exception type (no numpy here, so the CLI can import it cheaply)."""


class ValidationError(ValueError):
    """A parameter is outside the range a formula is defined on.

    ``name`` is the parameter (the CLI maps it to ``--name``), ``value`` the
    offending value and ``allowed`` a description of the allowed range.
    """

    def __init__(self, name: str, value: object, allowed: str):
        self.name = name
        self.value = value
        self.allowed = allowed
        super().__init__(f"{name} must be {allowed}; got {value!r}")
