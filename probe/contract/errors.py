"""Errors that mean "the user asked for something that cannot be": the CLI prints them and exits 2."""


class ConfigError(ValueError):
    """A bad option, model path or checkpoint; the message names the problem and the valid choices."""
