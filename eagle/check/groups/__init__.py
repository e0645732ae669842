"""The checks of ``python -m eagle.check``, one module per seam group, named as the header's
groups and the cpu backend's files are (backends/cpu/<name>.cpp):

=============== ==========================================================================
module          check IDs (the first dotted part is the group; eagle/check/_registry.py)
=============== ==========================================================================
static          ``static.*``: the library file itself (ELF exports, NEEDED), read without a call
required        ``required.*``: the handshake every backend exports (version, last_error,
                build_info, probe, free, capabilities, device_types)
stream          ``stream.*``, ``stream_query.*`` (the per-symbol entry that extends stream)
capture         ``capturer.*``, ``captured.*``
fork            ``fork.*``
conditional     ``conditional.*``, ``conditional_begin_case.*``
attribution     ``attribution.*``
graph           ``graph.*``
launcher        ``launcher.*``, ``launcher_query.*``
exec            ``exec.*``
device          ``device.*``
interop         ``interop.*``
filtering       ``filtering.*``, ``reorder_device.*``
memory          copies and host memory (minor 6): ``memcpy.*``, ``host_alloc.*``, ``host_free.*``,
                ``host_func.*``
module          kernels and device memory (minor 7): ``module_from_source.*``,
                ``module_from_image.*``, ``module_function.*``, ``module_release.*``,
                ``mem_alloc.*``, ``mem_free.*``
=============== ==========================================================================

A module holds every check of its groups in the order they run: first those of kind ``static``
(``<group>.release_null``, ``<group>.unknown_flags``, the ``required.*`` handshake rules: no device
needed, except that the unknown-flag checks create objects, so they run where probe() says a
device is usable), then the behavioural ones. The checks written for issue 29, one per contract
sentence the mutation corpus showed unchecked (each shown to fail on a cpu mutant,
tools/mutate_cpu.py, first), sit in their groups' modules like the rest. Besides each group's own behaviour, the header's general rules are checked
sentence by sentence for every group they touch:

- "A handle is not one this backend made, or has been released or consumed" -> BAD_HANDLE, with a
  message (``<group>.bad_handle``). That sentence defines the status; the header nowhere requires a
  backend to recognise every released handle (in C that means a registry of every handle, which
  Vulkan and PJRT call invalid usage instead), so these checks are advice, never a failure;
- "A failed call leaves a message" -> every status a check provokes carries one (Session.expect);
  NULL out-parameters are INVALID_ARGUMENT (``<group>.null_out``);
- out-parameters are checked with data whose every byte matters (``memcpy.every_byte``);
- "ERROR when that work failed" -> failed enqueued work surfaces at synchronize
  (``stream.failed_work_surfaces``, ``launcher.failed_replay_surfaces``);
- releases free what they release, measured: threads, descriptors and resident memory of this
  process do not grow over many create/release cycles (``<group>.release_frees``).

Each check builds its own objects from raw seam calls (eagle/check/_seam.py) and compares with
what the seam's comments promise; kernels are the checker's own (eagle/check/_device.py). A group
module imports the registry, the session and ``_helpers`` (what several groups share), never
another group's module (tests/test_layers.py). eagle/check/_all.py imports them all."""
