"""The kernel handles eagle has handed out (``Kernel.handle``), and whether their code is still
there: a raw handle (an int) launched after its module was closed, or after the module that made
it was dropped and its code unloaded, would call code that is gone (SIGSEGV). eagle.run refuses
such a handle with a HandleError and, for one whose code is loaded, holds that code for the
launch and checks the launch against the kernel's declaration, as it does for a Kernel. Handles eagle never handed out (a foreign function pointer, a
CUfunction of another library) are launched as given: eagle cannot check them."""
import threading
import weakref

_lock = threading.Lock()
# handle -> (weak reference to the module's loaded code, or None once its module is closed, the
# module's name, the kernel's signature or None)
_issued = {}


def issued(handle, loaded, module_name, signature=None):
    """``handle`` (int) is a kernel of the module ``module_name`` whose code is ``loaded``, declared
    with ``signature`` (eagle/_signature.py; None: undeclared)."""
    with _lock:
        _issued[int(handle)] = (weakref.ref(loaded), module_name, signature)


def closed(handles):
    """The module of ``handles`` was closed: launching them by raw value is refused from now on."""
    with _lock:
        for h in handles:
            entry = _issued.get(int(h))
            if entry is not None:
                _issued[int(h)] = (None, entry[1], entry[2])


def code_of(handle):
    """``(known, loaded, signature)`` for a raw kernel handle: ``known`` when eagle handed it out,
    ``loaded`` its module's code while that is open and loaded (else None), ``signature`` its
    declaration's."""
    with _lock:
        entry = _issued.get(handle)
    if entry is None:
        return False, None, None
    ref, _, signature = entry
    return True, (ref() if ref is not None else None), signature


def module_name(handle):
    with _lock:
        entry = _issued.get(handle)
    return entry[1] if entry else None
