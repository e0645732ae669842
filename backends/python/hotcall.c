/* eagle._hotcall -- the compiled hot call path of eagle's Python API (see eagle/_hotcall/__init__.py).
 *
 * The seam calls a replay loop makes on every step (eagle_backend_stream_synchronize,
 * eagle_backend_launcher_launch, eagle_backend_launcher_synchronize) all have the shape
 * `eagle_backend_status fn(void* handle)`. A BoundCall binds one such function to one handle and
 * its owner thread; calling the BoundCall makes the call with no Python frame in between:
 *
 *   BoundCall(fn, handle, owner, failed, symbol, watch, counted)
 *     fn       address (int) of the seam function, from eagle's cffi library object of a loaded
 *              backend (the eagle object holding this BoundCall keeps that backend loaded);
 *     handle   the handle's address (int);
 *     owner    threading.get_ident() of the thread the handle belongs to;
 *     failed   a callable returning the object to report to (eagle passes the handle's keeper,
 *              which returns itself and keeps the handle alive as long as this BoundCall; a weak
 *              reference also works); its method _hot_failed(symbol, status) is called (with the
 *              GIL) to raise whenever the call cannot succeed quietly (when it returns None,
 *              eagle.errors.HandleError is raised here instead);
 *     symbol   the seam function's full name (str), passed to _hot_failed;
 *     watch    a list (the backend's pending host-function errors) or None: after a call that
 *              returned 0, a non-empty list also goes to _hot_failed(symbol, 0);
 *     counted  true when the BoundCall takes an optional count: bc(n) makes n calls, stopping at
 *              the first nonzero status (n >= 0; 0 calls nothing). Arguments it does not take
 *              (or a count that is no integer >= 0) go to _hot_bad_args(symbol, args), which raises.
 *
 *   bc() / bc(n) -> None, or whatever _hot_failed returns (it is expected to raise).
 *     Nothing is called, and _hot_failed(symbol, NOT_CALLED) is called instead, when the calling
 *     thread is not `owner` or the BoundCall was disarmed. What happens to the GIL is `gil`'s:
 *
 *   gil (keyword, default GIL_RELEASE) -- the GIL around the calls:
 *     GIL_RELEASE     released, as cffi does, so a backend thread may run Python host functions
 *                     meanwhile. For calls that wait (synchronizes).
 *     GIL_WHEN_QUIET  kept while no Python host function can be pending (the process-wide count
 *                     below is 0), else released; after HOLD_RUN_MAX calls in a row with it
 *                     kept, one call releases it. For launches of work with no Python in it: an
 *                     enqueue that blocks (a full launch queue) can only wait for the device, and
 *                     the device waits for no Python while the count is 0.
 *     GIL_COUNTED     released; each call first adds 1 to the count and to this BoundCall's
 *                     `outstanding`. For launches of graphs that hold Python host functions.
 *   query (keyword, default 0) -- the address of the wait's completion query (seam minor 8:
 *     eagle_backend_stream_query / eagle_backend_launcher_query, `int32_t q(void*, int32_t* done)`),
 *     or 0. With one, a call on the main thread waits interruptibly: it queries instead of calling
 *     fn, with the GIL released, first spinning (yielding the CPU) for WAIT_SPIN_NS, then sleeping
 *     between queries (elapsed / WAIT_SLEEP_DIVISOR, within [WAIT_SLEEP_MIN_NS, WAIT_SLEEP_MAX_NS]),
 *     and every WAIT_SIGNAL_CHECK_NS it takes the GIL and runs Python's signal handlers
 *     (PyErr_CheckSignals): an exception one raises (KeyboardInterrupt, an alarm's) is raised by the
 *     call at once, with the work still enqueued and the handle usable. A query that finds the work
 *     done has had a synchronize's effects, so fn is not called then. Other threads (Python runs
 *     signal handlers on the main thread only), counted calls and BoundCalls with no query call fn,
 *     which blocks.
 *   partner (keyword, default None) -- a GIL_COUNTED BoundCall whose launches this one waits for
 *     (the launcher's synchronize): after a call of this one returns 0, the partner's
 *     outstanding launches have all run, so they are taken off the count.
 *
 * The count of Python host functions that may still run (module functions host_calls_add(k),
 * host_calls_pending()): eagle adds 1 when it enqueues a Python host function outside a capture
 * and takes 1 off when it has run; GIL_COUNTED launches add theirs as above. It may
 * overestimate (a launch that failed, a launcher never synchronized), which only makes launches
 * release the GIL; it never underestimates.
 *   bc.call(...)  the same call as a METH_FASTCALL method: CPython calls it by vectorcall, with no
 *     argument tuple and no tp_call dispatch. eagle stores this bound method on its objects.
 *   bc.disarm()  every later call goes to _hot_failed(symbol, NOT_CALLED); the eagle object calls
 *     it when its handle is closed or consumed, before the handle is released.
 *
 * Release markers (eagle/_inflight/markers.py): RELEASE_MARKER is the address of a C host function,
 * void release_marker(void* word), that stores 1 into the uint32 `word` (release order) and does
 * nothing else: no GIL, no Python, no CUDA call. eagle enqueues it behind a stream's work and
 * polls the word, so the backend's host-function thread never waits for the GIL for eagle's own
 * markers (a thread that holds the GIL while it waits for the device cannot deadlock with them).
 * marker_slab(k) returns the address of k zero-filled uint32 words that are never freed: a marker
 * may run after the interpreter has finalized its objects.
 *
 * Only the stable ABI (3.10) is used, so one build serves every CPython >= 3.10. */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#ifdef _WIN32
#include <windows.h>
#else
#include <sched.h>
#include <time.h>
#endif
#ifdef __linux__
#include <sys/prctl.h>
#endif

typedef int32_t (*seam_handle_fn)(void*);
typedef int32_t (*seam_query_fn)(void*, int32_t*);

/* Interruptible waits (the `query` keyword). Spinning first keeps a short wait (a replay of a small
 * graph) as fast as the backend's own synchronize (the cpu backend spins as long before it blocks).
 * Then sleeps of 1/16 of the time waited so far keep a long wait within ~6% of its length plus one
 * wake-up, with few wake-ups (500 a second at most): each may take a busy core from the work, and
 * on a loaded 2-core machine sleeps of 1/64 cost more in wake-ups (+10-20% on 1-10 ms waits) than
 * they saved. Signal handlers run every 20 ms, well within the 1 s a user waits for Ctrl-C. */
#define WAIT_SPIN_NS 50000LL
#define WAIT_SLEEP_MIN_NS 20000LL
#define WAIT_SLEEP_MAX_NS 2000000LL
#define WAIT_SLEEP_DIVISOR 16
#define WAIT_SIGNAL_CHECK_NS 20000000LL

/* threading.main_thread().ident, read at module init: the thread Python runs signal handlers on. */
static unsigned long g_main_thread;

/* Not an int32: no seam status can equal it. */
#define NOT_CALLED ((long long)1 << 40)

enum { GIL_RELEASE = 0, GIL_WHEN_QUIET = 1, GIL_COUNTED = 2 };
/* GIL_WHEN_QUIET: at most this many calls in a row keep the GIL; then one releases it, so a
 * thread waiting for the GIL gets it even in a tight replay loop. */
#define HOLD_RUN_MAX 64

/* Python host functions that may still run (see the header comment); atomic. */
static long long g_host_calls;

static long long host_calls_load(void) { return __atomic_load_n(&g_host_calls, __ATOMIC_ACQUIRE); }
static void host_calls_add(long long k) { __atomic_add_fetch(&g_host_calls, k, __ATOMIC_ACQ_REL); }

/* Makes `times` calls of fn(handle) with the GIL released; the first nonzero status, else 0.
 * *made: the calls that returned 0. */
static int32_t call_released(seam_handle_fn fn, void* handle, long long times, long long* made) {
    int32_t status = 0;
    long long i = 0;
    PyThreadState* ts = PyEval_SaveThread();
    for (; i < times && status == 0; ++i) status = fn(handle);
    PyEval_RestoreThread(ts);
    *made = status == 0 ? i : i - 1;
    return status;
}

/* ------------------------------------------------------------------------------- BoundCall */

typedef struct {
    PyObject_HEAD
    seam_handle_fn fn;
    void* handle;
    unsigned long owner;
    int armed;
    int counted;
    PyObject* failed; /* callable returning the object to report to (or None): held strongly */
    PyObject* symbol; /* str */
    PyObject* watch;  /* list or NULL */
    int gil;          /* GIL_RELEASE, GIL_WHEN_QUIET or GIL_COUNTED */
    int held_run;     /* GIL_WHEN_QUIET: calls in a row made with the GIL kept */
    long long outstanding; /* GIL_COUNTED: launches added to the count and not yet waited for */
    PyObject* partner;     /* a GIL_COUNTED BoundCall this one waits for, or NULL */
    seam_query_fn query;   /* the wait's completion query, or NULL (see the header comment) */
} BoundCall;

static PyTypeObject* g_bound_type; /* BoundCall, set at module init */

/* `times` calls of self->fn(self->handle), the GIL as self->gil says; the first nonzero status. */
static int32_t call_as_configured(BoundCall* self, long long times) {
    long long made = 0;
    if (self->gil == GIL_COUNTED) {
        /* counted before the launches (another thread may launch as soon as the GIL is free);
         * a call that failed enqueued nothing, so it is taken off again */
        host_calls_add(times);
        const int32_t st = call_released(self->fn, self->handle, times, &made);
        host_calls_add(made - times);
        self->outstanding += made;
        return st;
    }
    if (self->gil != GIL_WHEN_QUIET) return call_released(self->fn, self->handle, times, &made);
    int32_t status = 0;
    for (long long i = 0; i < times && status == 0; ++i) {
        if (self->held_run < HOLD_RUN_MAX && host_calls_load() == 0) {
            ++self->held_run;
            status = self->fn(self->handle);
        } else {
            self->held_run = 0;
            status = call_released(self->fn, self->handle, 1, &made);
        }
    }
    return status;
}

static long long now_ns(void) {
#ifdef _WIN32
    return (long long)GetTickCount64() * 1000000LL;
#else
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
#endif
}

static void pause_ns(long long ns) {
#ifdef _WIN32
    Sleep(ns >= 1000000LL ? (DWORD)(ns / 1000000LL) : 0);
#else
    struct timespec req = {(time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
    nanosleep(&req, NULL);
#endif
}

static void yield_cpu(void) {
#ifdef _WIN32
    SwitchToThread();
#else
    sched_yield();
#endif
}

/* The waits a signal handler interrupted, as (query address, handle) ints, appended here and read
 * by eagle/_inflight/releases.py: work they left may never finish, and on some kinds a release or
 * a free waits for the whole device (module attribute INTERRUPTED; the cffi path appends too). */
static PyObject* g_interrupted = NULL;
/* Callables called with the interrupted wait's owner (a Stream, a Launcher) after it is noted
 * (module attribute ON_INTERRUPT, a list eagle/_inflight/cancel.py appends its hook to: it stops
 * the drains that wait was for). What they raise is dropped: the handler's exception is what the
 * call raises. */
static PyObject* g_on_interrupt = NULL;

static void note_interrupted(BoundCall* self, PyObject* owner) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb); /* the handler's exception stays what the call raises */
    PyObject* entry = Py_BuildValue("(KK)", (unsigned long long)(uintptr_t)self->query,
                                    (unsigned long long)(uintptr_t)self->handle);
    if (entry && g_interrupted) (void)PyList_Append(g_interrupted, entry);
    Py_XDECREF(entry);
    PyErr_Clear();
    const Py_ssize_t hooks = g_on_interrupt ? PyList_Size(g_on_interrupt) : 0;
    for (Py_ssize_t k = 0; k < hooks; ++k) {
        PyObject* hook = PyList_GetItem(g_on_interrupt, k); /* borrowed */
        PyObject* r = hook ? PyObject_CallFunctionObjArgs(hook, owner, NULL) : NULL;
        Py_XDECREF(r);
        PyErr_Clear();
    }
    PyErr_Restore(type, value, tb);
}

/* The interruptible wait (see `query` in the header comment). Returns the query's status; sets
 * *raised (and leaves the Python exception set, the GIL held) when a signal handler raised. */
static int32_t wait_polling(BoundCall* self, int* raised) {
    int32_t done = 0;
    *raised = 0;
    PyThreadState* ts = PyEval_SaveThread();
    int32_t status = self->query(self->handle, &done);
    if (status == 0 && !done) {
        const long long t0 = now_ns();
        long long checked = t0;
#ifdef __linux__
        /* the sleeps are short: the default 50 us of timer slack would make each one 60 us or more */
        int slack_saved = 0;
        const int slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
#endif
        for (;;) {
            const long long t = now_ns();
            if (t - checked >= WAIT_SIGNAL_CHECK_NS) {
                PyEval_RestoreThread(ts);
                if (PyErr_CheckSignals() < 0) {
                    *raised = 1;
                    break;
                }
                ts = PyEval_SaveThread();
                checked = t;
            }
            const long long elapsed = t - t0;
            if (elapsed < WAIT_SPIN_NS) {
                yield_cpu();
            } else {
#ifdef __linux__
                if (!slack_saved && slack > 1) {
                    slack_saved = prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0) == 0;
                }
#endif
                long long d = elapsed / WAIT_SLEEP_DIVISOR;
                d = d < WAIT_SLEEP_MIN_NS ? WAIT_SLEEP_MIN_NS : d > WAIT_SLEEP_MAX_NS ? WAIT_SLEEP_MAX_NS : d;
                pause_ns(d);
            }
            status = self->query(self->handle, &done);
            if (status != 0 || done) break;
        }
#ifdef __linux__
        if (slack_saved) (void)prctl(PR_SET_TIMERSLACK, (unsigned long)slack, 0, 0, 0);
#endif
        if (*raised) return 0;
    }
    PyEval_RestoreThread(ts);
    return status;
}

/* After a successful wait: the partner's launches have run; take them off the count. */
static void settle_partner(BoundCall* self) {
    BoundCall* p = (BoundCall*)self->partner;
    if (p && p->outstanding) {
        host_calls_add(-p->outstanding);
        p->outstanding = 0;
    }
}

/* A new reference to the object to report to: a weak reference's referent (or None), or `failed`
 * itself when it is no weak reference (eagle's keeper, which returns itself when called: taken
 * directly here, so a call costs no Python frame). */
static PyObject* target(BoundCall* self) {
    if (PyWeakref_Check(self->failed)) return PyObject_CallNoArgs(self->failed);
    Py_INCREF(self->failed);
    return self->failed;
}

/* obj.<method>(symbol, arg) for the object to report to (HandleError once it is gone). */
static PyObject* report_to(BoundCall* self, const char* method, PyObject* arg) {
    PyObject* obj = target(self);
    if (!obj) return NULL;
    if (obj == Py_None) { /* raise eagle.HandleError */
        Py_DECREF(obj);
        PyObject* errors = PyImport_ImportModule("eagle.errors");
        PyObject* handle_error = errors ? PyObject_GetAttrString(errors, "HandleError") : NULL;
        Py_XDECREF(errors);
        if (!handle_error) return NULL;
        PyObject* msg = PyUnicode_FromFormat(
            "eagle: the object this call of %U was taken from has been garbage-collected and its "
            "handle released; keep the object, not only its bound method", self->symbol);
        if (msg) {
            PyErr_SetObject(handle_error, msg);
            Py_DECREF(msg);
        }
        Py_DECREF(handle_error);
        return NULL;
    }
    PyObject* r = PyObject_CallMethod(obj, method, "OO", self->symbol, arg);
    Py_DECREF(obj);
    return r;
}

static PyObject* report(BoundCall* self, long long status) {
    PyObject* st = PyLong_FromLongLong(status);
    if (!st) return NULL;
    PyObject* r = report_to(self, "_hot_failed", st);
    Py_DECREF(st);
    return r;
}

/* The call itself: `nargs` positional arguments, the first `arg0` (borrowed; NULL when none).
 * `bad_args` builds what _hot_bad_args is given, only when an argument is refused. */
static PyObject* invoke(BoundCall* self, Py_ssize_t nargs, PyObject* arg0, PyObject* (*bad_args)(void*), void* ctx) {
    long long times = 1;
    if (nargs != 0) {
        if (nargs != 1 || !self->counted || !PyLong_Check(arg0)) goto bad;
        times = PyLong_AsLongLong(arg0);
        if (times == -1 && PyErr_Occurred()) PyErr_Clear();
        if (times < 0) goto bad;
    }
    if (!self->armed || self->owner != PyThread_get_thread_ident()) return report(self, NOT_CALLED);
    if (times == 0) Py_RETURN_NONE;
    /* Hold the eagle object while the GIL is released, so that its finalizer (which releases the
     * handle) cannot run in another thread during the call. Armed implies it is alive. */
    PyObject* obj = target(self); /* new reference: held while the GIL is released */
    if (!obj) return NULL;
    if (obj == Py_None) {
        Py_DECREF(obj);
        return report(self, NOT_CALLED);
    }
    int32_t status;
    if (self->query && !self->counted && PyThread_get_thread_ident() == g_main_thread) {
        int raised = 0;
        status = wait_polling(self, &raised);
        if (raised) { /* a signal handler raised: the work stays enqueued, the handle usable */
            note_interrupted(self, obj);
            Py_DECREF(obj);
            return NULL;
        }
    } else {
        status = call_as_configured(self, times);
    }
    Py_DECREF(obj);
    if (status != 0) return report(self, status);
    settle_partner(self);
    if (self->watch && PyList_Size(self->watch) > 0) return report(self, 0);
    Py_RETURN_NONE;
bad : {
    PyObject* a = bad_args(ctx);
    if (!a) return NULL;
    PyObject* r = report_to(self, "_hot_bad_args", a);
    Py_DECREF(a);
    return r;
}
}

static PyObject* tuple_again(void* args) {
    Py_INCREF((PyObject*)args);
    return (PyObject*)args;
}

/* bc(...) through tp_call: the arguments come as a tuple (and a dict of keywords). */
static PyObject* bound_call(PyObject* op, PyObject* args, PyObject* kwargs) {
    BoundCall* self = (BoundCall*)op;
    if (kwargs && PyDict_Size(kwargs) != 0) return report_to(self, "_hot_bad_args", kwargs);
    const Py_ssize_t nargs = PyTuple_Size(args);
    return invoke(self, nargs, nargs ? PyTuple_GetItem(args, 0) : NULL, tuple_again, args);
}

typedef struct {
    PyObject* const* args;
    Py_ssize_t nargs;
    PyObject* kwnames;
} FastArgs;

/* The refused arguments of a vectorcall: a dict of the keywords when there are any, else a tuple. */
static PyObject* fast_bad_args(void* p) {
    const FastArgs* a = (const FastArgs*)p;
    if (a->kwnames && PyTuple_Size(a->kwnames) > 0) {
        PyObject* d = PyDict_New();
        for (Py_ssize_t i = 0; d && i < PyTuple_Size(a->kwnames); ++i)
            if (PyDict_SetItem(d, PyTuple_GetItem(a->kwnames, i), a->args[a->nargs + i]) < 0) Py_CLEAR(d);
        return d;
    }
    PyObject* t = PyTuple_New(a->nargs);
    for (Py_ssize_t i = 0; t && i < a->nargs; ++i) {
        Py_INCREF(a->args[i]);
        PyTuple_SetItem(t, i, a->args[i]);
    }
    return t;
}

/* bc.call(...): the same call as a METH_FASTCALL method, which CPython calls with no argument
 * tuple (vectorcall). eagle stores this bound method as the hot attribute (Launcher.launch, ...). */
static PyObject* bound_fast(PyObject* op, PyObject* const* args, Py_ssize_t nargs, PyObject* kwnames) {
    BoundCall* self = (BoundCall*)op;
    FastArgs a = {args, nargs, kwnames};
    if (kwnames && PyTuple_Size(kwnames) > 0) return invoke(self, -1, NULL, fast_bad_args, &a);
    return invoke(self, nargs, nargs ? args[0] : NULL, fast_bad_args, &a);
}

static PyObject* bound_new(PyTypeObject* type, PyObject* args, PyObject* kwargs) {
    PyObject *fn, *handle, *owner, *failed, *symbol, *watch, *partner = Py_None, *query = NULL;
    int counted = 0, gil = GIL_RELEASE;
    static char* names[] = {"fn", "handle", "owner", "failed", "symbol", "watch", "counted", "gil", "partner",
                            "query", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOUO|p$iOO", names, &fn, &handle, &owner, &failed, &symbol,
                                     &watch, &counted, &gil, &partner, &query))
        return NULL;
    void* q = NULL;
    if (query && query != Py_None) {
        q = PyLong_AsVoidPtr(query);
        if (!q && PyErr_Occurred()) return NULL;
    }
    if (gil != GIL_RELEASE && gil != GIL_WHEN_QUIET && gil != GIL_COUNTED) {
        PyErr_Format(PyExc_ValueError, "eagle._hotcall._compiled.BoundCall: gil must be GIL_RELEASE, "
                     "GIL_WHEN_QUIET or GIL_COUNTED, got %d", gil);
        return NULL;
    }
    if (partner != Py_None && (!PyObject_TypeCheck(partner, g_bound_type) || ((BoundCall*)partner)->gil != GIL_COUNTED)) {
        PyErr_SetString(PyExc_TypeError, "eagle._hotcall._compiled.BoundCall: partner must be None or a "
                        "BoundCall made with gil=GIL_COUNTED");
        return NULL;
    }
    if (!PyCallable_Check(failed)) {
        PyErr_SetString(PyExc_TypeError,
                        "eagle._hotcall._compiled.BoundCall: failed must be callable (returning the object "
                        "to report to, or None once it is gone: a weak reference, or a keeper returning itself)");
        return NULL;
    }
    if (watch != Py_None && !PyList_Check(watch)) {
        PyErr_SetString(PyExc_TypeError, "eagle._hotcall._compiled.BoundCall: watch must be a list or None");
        return NULL;
    }
    void* f = PyLong_AsVoidPtr(fn);
    if (!f) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "eagle._hotcall._compiled.BoundCall: fn is 0");
        return NULL;
    }
    void* h = PyLong_AsVoidPtr(handle);
    if (!h && PyErr_Occurred()) return NULL;
    const unsigned long o = PyLong_AsUnsignedLong(owner);
    if (o == (unsigned long)-1 && PyErr_Occurred()) return NULL;

    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    BoundCall* self = (BoundCall*)alloc(type, 0);
    if (!self) return NULL;
    self->fn = (seam_handle_fn)f;
    self->handle = h;
    self->owner = o;
    self->armed = 1;
    self->counted = counted;
    self->gil = gil;
    self->query = (seam_query_fn)q;
    if (partner != Py_None) {
        Py_INCREF(partner);
        self->partner = partner;
    }
    Py_INCREF(failed);
    self->failed = failed;
    Py_INCREF(symbol);
    self->symbol = symbol;
    if (watch != Py_None) {
        Py_INCREF(watch);
        self->watch = watch;
    }
    return (PyObject*)self;
}

static void bound_dealloc(PyObject* op) {
    BoundCall* self = (BoundCall*)op;
    PyTypeObject* type = Py_TYPE(op);
    Py_XDECREF(self->failed);
    Py_XDECREF(self->symbol);
    Py_XDECREF(self->watch);
    Py_XDECREF(self->partner);
    freefunc free_fn = (freefunc)PyType_GetSlot(type, Py_tp_free);
    free_fn(op);
    Py_DECREF(type);
}

static PyObject* bound_disarm(PyObject* op, PyObject* unused) {
    (void)unused;
    ((BoundCall*)op)->armed = 0;
    Py_RETURN_NONE;
}

static PyObject* bound_get_interruptible(PyObject* op, void* unused) {
    (void)unused;
    return PyBool_FromLong(((BoundCall*)op)->query != NULL);
}

static PyObject* bound_repr(PyObject* op) {
    BoundCall* self = (BoundCall*)op;
    return PyUnicode_FromFormat("<eagle._hotcall._compiled.BoundCall %U%s>", self->symbol, self->armed ? "" : " (disarmed)");
}

static PyObject* bound_get_outstanding(PyObject* op, void* unused) {
    (void)unused;
    return PyLong_FromLongLong(((BoundCall*)op)->outstanding);
}

static PyGetSetDef bound_getset[] = {
    {"outstanding", bound_get_outstanding, NULL,
     "GIL_COUNTED: launches added to the host-call count and not yet waited for.", NULL},
    {"interruptible", bound_get_interruptible, NULL,
     "True when a call on the main thread waits by polling a completion query (signals are handled).", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMethodDef bound_methods[] = {
    {"call", (PyCFunction)(void (*)(void))bound_fast, METH_FASTCALL | METH_KEYWORDS,
     "The call itself as a method (vectorcall, no argument tuple): bc.call(...) is bc(...)."},
    {"disarm", bound_disarm, METH_NOARGS, "Make every later call report NOT_CALLED (the handle is gone)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot bound_slots[] = {
    {Py_tp_new, (void*)bound_new},
    {Py_tp_dealloc, (void*)bound_dealloc},
    {Py_tp_call, (void*)bound_call},
    {Py_tp_repr, (void*)bound_repr},
    {Py_tp_methods, bound_methods},
    {Py_tp_getset, bound_getset},
    {Py_tp_doc, (void*)"One seam call bound to a handle and its owner thread (see eagle/_hotcall/__init__.py)."},
    {0, NULL},
};

static PyType_Spec bound_spec = {
    "eagle._hotcall._compiled.BoundCall", sizeof(BoundCall), 0, Py_TPFLAGS_DEFAULT, bound_slots,
};

/* ------------------------------------------------------------------------------- release markers */

static void release_marker(void* word) { __atomic_store_n((uint32_t*)word, 1u, __ATOMIC_RELEASE); }

static PyObject* module_marker_slab(PyObject* m, PyObject* arg) {
    (void)m;
    const Py_ssize_t k = PyLong_AsSsize_t(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    if (k <= 0 || k > ((Py_ssize_t)1 << 24)) {
        PyErr_SetString(PyExc_ValueError, "marker_slab(k): k must be in 1 .. 2^24");
        return NULL;
    }
    void* words = calloc((size_t)k, sizeof(uint32_t)); /* never freed (see the header comment) */
    if (!words) return PyErr_NoMemory();
    return PyLong_FromVoidPtr(words);
}

/* ------------------------------------------------------------------------------------ module */

static PyObject* module_host_calls_add(PyObject* m, PyObject* arg) {
    (void)m;
    const long long k = PyLong_AsLongLong(arg);
    if (k == -1 && PyErr_Occurred()) return NULL;
    host_calls_add(k);
    Py_RETURN_NONE;
}

static PyObject* module_host_calls_pending(PyObject* m, PyObject* unused) {
    (void)m;
    (void)unused;
    return PyLong_FromLongLong(host_calls_load());
}

static PyMethodDef module_methods[] = {
    {"host_calls_add", module_host_calls_add, METH_O,
     "host_calls_add(k): k more (or, negative, fewer) Python host functions may still run."},
    {"marker_slab", module_marker_slab, METH_O,
     "marker_slab(k): the address of k zero-filled uint32 words for release markers, never freed."},
    {"host_calls_pending", module_host_calls_pending, METH_NOARGS,
     "The count of Python host functions that may still run (GIL_WHEN_QUIET keeps the GIL only at 0)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef hot_module = {
    PyModuleDef_HEAD_INIT, "_compiled", "eagle's compiled hot call path (see eagle/_hotcall/__init__.py).", -1,
    module_methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__compiled(void) {
    PyObject* m = PyModule_Create(&hot_module);
    if (!m) return NULL;
    PyObject* type = PyType_FromSpec(&bound_spec);
    if (!type || PyModule_AddObject(m, "BoundCall", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return NULL;
    }
    g_bound_type = (PyTypeObject*)type; /* the module holds it */
    /* the main thread's id (signal handlers run there): 0, matching no thread, when unknown */
    PyObject* threading = PyImport_ImportModule("threading");
    PyObject* main = threading ? PyObject_CallMethod(threading, "main_thread", NULL) : NULL;
    PyObject* ident = main ? PyObject_GetAttrString(main, "ident") : NULL;
    g_main_thread = ident ? PyLong_AsUnsignedLong(ident) : 0;
    if (PyErr_Occurred()) {
        PyErr_Clear();
        g_main_thread = 0;
    }
    Py_XDECREF(ident);
    Py_XDECREF(main);
    Py_XDECREF(threading);
    if (PyModule_AddIntConstant(m, "GIL_RELEASE", GIL_RELEASE) < 0 ||
        PyModule_AddIntConstant(m, "GIL_WHEN_QUIET", GIL_WHEN_QUIET) < 0 ||
        PyModule_AddIntConstant(m, "GIL_COUNTED", GIL_COUNTED) < 0 ||
        PyModule_AddIntConstant(m, "HOLD_RUN_MAX", HOLD_RUN_MAX) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    PyObject* nc = PyLong_FromLongLong(NOT_CALLED);
    if (!nc || PyModule_AddObject(m, "NOT_CALLED", nc) < 0) {
        Py_XDECREF(nc);
        Py_DECREF(m);
        return NULL;
    }
    g_interrupted = PyList_New(0);
    if (!g_interrupted) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(g_interrupted); /* one reference kept here, one given to the module */
    if (PyModule_AddObject(m, "INTERRUPTED", g_interrupted) < 0) {
        Py_DECREF(g_interrupted);
        Py_DECREF(m);
        return NULL;
    }
    g_on_interrupt = PyList_New(0);
    if (!g_on_interrupt) {
        Py_DECREF(m);
        return NULL;
    }
    Py_INCREF(g_on_interrupt); /* one reference kept here, one given to the module */
    if (PyModule_AddObject(m, "ON_INTERRUPT", g_on_interrupt) < 0) {
        Py_DECREF(g_on_interrupt);
        Py_DECREF(m);
        return NULL;
    }
    PyObject* marker = PyLong_FromVoidPtr((void*)(uintptr_t)&release_marker);
    if (!marker || PyModule_AddObject(m, "RELEASE_MARKER", marker) < 0) {
        Py_XDECREF(marker);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
