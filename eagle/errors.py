"""eagle's exception tree. Every error eagle raises derives from :class:`EagleError`
and, where one fits, from the built-in exception it mirrors."""


class EagleError(Exception):
    """Base of every eagle error."""


class BackendLoadError(EagleError, OSError):
    """A backend library was refused at load time (not loadable, wrong major, a broken promise)."""


class BackendUnavailable(EagleError, RuntimeError):
    """A backend, a group or a symbol is not there, or no device of the kind is usable."""


class InteropError(EagleError, RuntimeError):
    """A value from another library (a DLPack stream code, a device) cannot be used."""


class Unsupported(EagleError, NotImplementedError):
    """The request is well formed but the backend does not do it."""


class EagleValueError(EagleError, ValueError):
    """An argument is out of its domain (raised for the seam's INVALID_ARGUMENT)."""


class EagleTypeError(EagleError, TypeError):
    """An argument has a type eagle cannot use."""


class EagleIndexError(EagleError, IndexError):
    """An index is out of range (raised for the seam's INDEX)."""


class EagleKeyError(EagleError, KeyError):
    """A name or key eagle was asked for does not exist (a graph member, a kernel)."""

    def __str__(self):  # KeyError quotes its message; eagle's messages are sentences
        return str(self.args[0]) if self.args else ""


class HandleError(EagleError, RuntimeError):
    """A handle was used after close, after a consuming call, or from another thread."""


class CompileError(EagleError, RuntimeError):
    """A kernel source did not compile (or an image did not load). ``log`` is the compiler's
    log, with its line numbers; the message carries it too."""

    def __init__(self, message="", log=""):
        super().__init__(message)
        self.log = log


class CompileTimeout(CompileError, TimeoutError):
    """A compile ran past ``eagle.compile(timeout=...)``; the compiler was stopped."""


class RanOutWarning(UserWarning):
    """A loop or drain ran out of iterations with samples still live: those samples are left
    unfinished (mask 0) where they stopped. The message names the loop and how many were left."""


class EagleMemoryError(EagleError, MemoryError):
    """An allocation could not be had: the backend's ``mem_alloc`` or ``host_alloc`` answered
    UNAVAILABLE, which for those calls means the memory is not there (free some, or ask for less)."""


class EagleBufferError(EagleError, BufferError):
    """An array cannot be exported as asked (DLPack to another device, or with a copy)."""


class EagleAttributeError(EagleError, AttributeError):
    """An attribute that eagle keeps read-only was assigned or deleted (``DeviceArray.shape``,
    ``.dtype``, ``.nbytes``, ``.address``, ...): what an array exports must describe the memory
    it holds. Make a new array (or a view through DLPack) instead."""
