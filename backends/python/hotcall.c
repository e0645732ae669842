/* eagle._hotcall -- the compiled hot call path of eagle's Python API.
 *
 * One function, call(fn, owner, handle[, times]), for the seam calls a replay loop makes on every
 * step (eagle_backend_stream_synchronize, eagle_backend_launcher_launch, ..._synchronize): they all
 * have the shape `eagle_backend_status fn(void* handle)`.
 *
 * Contract:
 *   fn      the address (int) of a seam function of that shape, taken from eagle's cffi library
 *           object of a loaded backend (the caller keeps that backend loaded);
 *   owner   the ident (threading.get_ident()) of the thread the handle belongs to, or None for a
 *           handle that is closed or consumed;
 *   handle  the handle's address (int);
 *   times   how many calls to make (default 1), stopping at the first nonzero status.
 * Returns the first nonzero status, else 0. When the calling thread is not `owner` (or owner is
 * None, or times < 1) nothing is called and NOT_CALLED is returned: the caller's slow path then
 * raises the right eagle error in Python. The GIL is released around the calls, as cffi does, so a
 * backend thread may run Python host functions meanwhile.
 *
 * This is only a faster way to make the same call eagle's cffi (ABI mode) declarations describe;
 * eagle falls back to calling through cffi when this module is not built (eagle/_hotpath.py). It
 * uses the stable ABI (3.10) only, so one build serves every CPython >= 3.10. */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef int32_t (*seam_handle_fn)(void*);

/* Not an int32: no seam status can equal it. */
#define NOT_CALLED ((long long)1 << 40)

static PyObject* not_called(void) { return PyLong_FromLongLong(NOT_CALLED); }

static PyObject* hot_call(PyObject* module, PyObject* const* args, Py_ssize_t nargs) {
    (void)module;
    if (nargs != 3 && nargs != 4) {
        PyErr_Format(PyExc_TypeError, "eagle._hotcall.call takes fn, owner, handle[, times] (%zd given)", nargs);
        return NULL;
    }
    if (!PyLong_Check(args[1])) return not_called(); /* None: closed or consumed */
    const unsigned long owner = PyLong_AsUnsignedLong(args[1]);
    if (owner == (unsigned long)-1 && PyErr_Occurred()) return NULL;
    if (owner != PyThread_get_thread_ident()) return not_called();

    seam_handle_fn fn = (seam_handle_fn)PyLong_AsVoidPtr(args[0]);
    if (!fn) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "eagle._hotcall.call: fn is 0");
        return NULL;
    }
    void* handle = PyLong_AsVoidPtr(args[2]);
    if (!handle && PyErr_Occurred()) return NULL;
    long long times = 1;
    if (nargs == 4) {
        times = PyLong_AsLongLong(args[3]);
        if (times == -1 && PyErr_Occurred()) return NULL;
        if (times < 1) return not_called();
    }

    int32_t status = 0;
    PyThreadState* ts = PyEval_SaveThread();
    for (long long i = 0; i < times && status == 0; ++i) status = fn(handle);
    PyEval_RestoreThread(ts);
    return PyLong_FromLong(status);
}

static PyMethodDef hot_methods[] = {
    {"call", (PyCFunction)(void (*)(void))hot_call, METH_FASTCALL,
     "call(fn, owner, handle[, times]) -> status: call the seam function at address fn on handle\n"
     "(times times, stopping at the first nonzero status) if the calling thread is owner;\n"
     "else return NOT_CALLED without calling."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef hot_module = {
    PyModuleDef_HEAD_INIT, "_hotcall",
    "eagle's compiled hot call path (see eagle/_hotpath.py).", -1, hot_methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__hotcall(void) {
    PyObject* m = PyModule_Create(&hot_module);
    if (m && PyModule_AddObject(m, "NOT_CALLED", not_called()) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
