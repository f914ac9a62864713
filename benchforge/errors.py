"""Domain errors: raised by services, turned into clear 4xx messages by the UI and the API."""


class DomainError(Exception):
    """A request that breaks a business rule. `status` is the HTTP status the UI/API answer with."""

    status = 400
    code = "invalid"

    def __init__(self, message: str, *, code: str | None = None, extra: dict | None = None):
        super().__init__(message)
        self.message = message
        if code:
            self.code = code
        self.extra = extra or {}


class IllegalTransition(DomainError):
    status = 409
    code = "illegal_transition"


class StaleVersion(DomainError):
    """A save that started from an older version than the one stored (optimistic locking)."""

    status = 409
    code = "stale_version"


class NotAllowed(DomainError):
    status = 403
    code = "not_allowed"


class Conflict(DomainError):
    """The request clashes with what another request did first (the state it wanted to change has
    moved on): 409, with what is there now named in the message and in `extra`."""

    status = 409
    code = "conflict"


class AlreadyExists(Conflict):
    """Creating something that exists: 409 naming the existing object (`extra["existing"]`)."""

    code = "exists"
