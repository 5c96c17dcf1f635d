"""The one error type the core raises for bad input, with a message meant for a person."""


class SmplIkError(Exception):
    """Bad input or data: the message names the file, array, joint or line at fault."""
