"""Kernels for a backend, by name: a thin front of :mod:`eagle.compile`.

Every kind compiles and loads through the seam (minor 7), so nothing here depends on the kind:
``load(backend, source, names)`` compiles a source with the kind's own compiler,
``load(backend, image=..., names=...)`` loads a binary image the kind understands. Both return an
:class:`eagle.Module`, whose kernels (``module.name`` / ``module['name']``) :func:`eagle.run` and a
stream's ``run`` launch."""
from .module import Module, include_dir

__all__ = ["Module", "include_dir", "load"]


def load(backend, source=None, names=(), *, image=None, **options):
    """A :class:`eagle.Module` of ``backend`` holding the kernels ``names`` (looked up now).

    Parameters
    ----------
    backend : Backend, kind or 'gpu'
    source : str, bytes or path, optional
        A kernel source (see :func:`eagle.compile`, whose keywords ``options`` are).
    names : str or sequence of str
        A sequence of anything but str is refused with EagleTypeError.
    image : bytes or path, optional
        A binary image instead of a source.

    Kernels a source declares with ``EAGLE_KERNEL`` are launched checked against their declared
    types; hand-written kernels and every kernel of an image are unchecked (see
    :class:`eagle.Kernel`).
    """
    from . import api  # noqa: PLC0415 - kernels.load is a convenience front over eagle.compile
    from .module import _items  # noqa: PLC0415 - with api
    names = [names] if isinstance(names, str) else _items(names, "eagle.kernels.load: names", str)
    if (source is None) == (image is None):
        from .errors import EagleValueError
        raise EagleValueError("eagle.kernels.load: give exactly one of source and image=")
    if image is not None:
        return api.load_image(image, backend=backend, kernels=names, **options)
    return api.compile(source, backend=backend, kernels=names, **options)
