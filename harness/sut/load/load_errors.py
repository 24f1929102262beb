"""The one error every SUT loader raises: a SUT that cannot be loaded, in one line for the user."""


class SutLoadError(Exception):
    pass
