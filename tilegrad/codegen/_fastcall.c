/* The native call path: a Kernel call whose signature an earlier call checked runs without Python.

   A Kernel is a Dispatcher. Calling it looks for a Signature that the keyword arguments match
   (names in order; per array its exact type, shape, strides and dtype; per other value its type and
   value), fills a copy of the signature's i64 argument array with this call's data pointers and
   allocations and calls the kernel's driver. Anything else (positional arguments, a signature not
   seen before, a written array that is read-only or overlaps another) calls the Kernel's
   `_call_checked`, which checks everything, refuses what it must and binds the signature for the
   next call. So this file decides nothing new: it repeats a decision the checking path made.

   numpy's array object is read through its C struct (numpy/ndarraytypes.h, PyArrayObject_fields,
   the same from numpy 1.7 to 2.x); `configure` is given numpy's own answers for probe arrays and
   leaves the native path off if this layout disagrees with any of them. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} ArrayFields;

#define ARRAY_WRITEABLE 0x0400 /* NPY_ARRAY_WRITEABLE */
#define MAX_KEYWORDS 64
#define MAX_NEW_ARRAYS 32
#define MAX_SIGNATURES 16
#define LOCAL_ARGV 512
#define STATUS_WORDS 8 /* launcher.STATUS_SLOTS: what every kernel may write after its status pointer */

typedef void (*DriverFn)(int64_t *argv, void *ub, int64_t ub_stride, int64_t blocks, int64_t worker,
                         int64_t workers, void *pool, void *barrier);

static PyTypeObject *ndarray_type = NULL;
static PyObject *new_empty = NULL, *new_zeros = NULL;
static int native_path_on = 0;

/* ---- Signature -------------------------------------------------------------------------------- */

typedef struct {
    PyObject *name;
    PyObject *type;  /* a value's exact type; NULL for an array */
    PyObject *value; /* the value; an array's dtype */
    int nd;
    Py_ssize_t *shape; /* nd sizes, then nd strides (bytes) */
    Py_ssize_t slot;   /* where the data pointer goes in argv; -1: not passed to the kernel */
    int written;
} Keyword;

typedef struct {
    PyObject_HEAD
    Py_ssize_t count;
    Keyword *keywords;
    int64_t *argv;
    Py_ssize_t argv_len, status_slot, status_words, status_count;
    int64_t *overlaps;
    Py_ssize_t overlaps_len;
    PyObject *new_arrays; /* tuple of (slot, shape, dtype, zeroed) */
    PyObject *outputs;    /* tuple: keyword index >= 0, -1 - new array index, or None */
    DriverFn driver;
    int64_t blocks;
    PyObject *run;          /* None: call the driver on this thread; else run(argv address) */
    PyObject *status_error; /* status words (tuple) -> the exception to raise */
    PyObject *keep;         /* keeps the compiled code alive */
} Signature;

static int signature_traverse(Signature *self, visitproc visit, void *arg) {
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_VISIT(self->keywords[i].type);
        Py_VISIT(self->keywords[i].value);
    }
    Py_VISIT(self->new_arrays);
    Py_VISIT(self->outputs);
    Py_VISIT(self->run);
    Py_VISIT(self->status_error);
    Py_VISIT(self->keep);
    return 0;
}

static int signature_clear(Signature *self) {
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_CLEAR(self->keywords[i].type);
        Py_CLEAR(self->keywords[i].value);
    }
    Py_CLEAR(self->new_arrays);
    Py_CLEAR(self->outputs);
    Py_CLEAR(self->run);
    Py_CLEAR(self->status_error);
    Py_CLEAR(self->keep);
    return 0;
}

static void signature_dealloc(Signature *self) {
    PyObject_GC_UnTrack(self);
    signature_clear(self);
    for (Py_ssize_t i = 0; i < self->count; i++) {
        Py_XDECREF(self->keywords[i].name);
        PyMem_Free(self->keywords[i].shape);
    }
    PyMem_Free(self->keywords);
    PyMem_Free(self->argv);
    PyMem_Free(self->overlaps);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int ssize_items(PyObject *tuple, Py_ssize_t *out, Py_ssize_t n) {
    for (Py_ssize_t i = 0; i < n; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(tuple, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

static int parse_keyword(Keyword *kw, PyObject *name, PyObject *form, Py_ssize_t status_words) {
    Py_INCREF(name);
    kw->name = name;
    kw->slot = -1;
    if (!PyTuple_Check(form) || (PyTuple_GET_SIZE(form) != 2 && PyTuple_GET_SIZE(form) != 5)) {
        PyErr_SetString(PyExc_TypeError, "a keyword form is (type, value) or (dtype, shape, strides, slot, written)");
        return -1;
    }
    if (PyTuple_GET_SIZE(form) == 2) {
        kw->type = Py_NewRef(PyTuple_GET_ITEM(form, 0));
        kw->value = Py_NewRef(PyTuple_GET_ITEM(form, 1));
        return 0;
    }
    PyObject *shape = PyTuple_GET_ITEM(form, 1), *strides = PyTuple_GET_ITEM(form, 2);
    if (!PyTuple_Check(shape) || !PyTuple_Check(strides) || PyTuple_GET_SIZE(shape) != PyTuple_GET_SIZE(strides)) {
        PyErr_SetString(PyExc_TypeError, "an array's shape and strides are tuples of one length");
        return -1;
    }
    kw->value = Py_NewRef(PyTuple_GET_ITEM(form, 0));
    kw->nd = (int)PyTuple_GET_SIZE(shape);
    kw->shape = PyMem_Calloc(2 * (size_t)kw->nd + 1, sizeof(Py_ssize_t));
    if (kw->shape == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    if (ssize_items(shape, kw->shape, kw->nd) < 0 || ssize_items(strides, kw->shape + kw->nd, kw->nd) < 0)
        return -1;
    kw->slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(form, 3));
    if (kw->slot == -1 && PyErr_Occurred())
        return -1;
    if (kw->slot < -1 || kw->slot >= status_words) {
        PyErr_SetString(PyExc_ValueError, "an array's slot is outside the argument array");
        return -1;
    }
    kw->written = PyObject_IsTrue(PyTuple_GET_ITEM(form, 4));
    return kw->written < 0 ? -1 : 0;
}

static int is_passed_array(Signature *s, int64_t index) {
    return index >= 0 && index < s->count && s->keywords[index].type == NULL && s->keywords[index].slot >= 0;
}

/* The overlap checks' flat form (see run_signature) names passed arrays only and ends where it should. */
static int check_overlaps(Signature *s) {
    Py_ssize_t at = 0;
    while (at < s->overlaps_len) {
        int64_t *check = s->overlaps + at;
        if (at + 4 > s->overlaps_len || check[3] < 0 || at + 4 + 3 * check[3] > s->overlaps_len ||
            !is_passed_array(s, check[0]))
            goto bad;
        for (int64_t j = 0; j < check[3]; j++)
            if (!is_passed_array(s, check[4 + 3 * j]))
                goto bad;
        at += 4 + 3 * check[3];
    }
    return 0;
bad:
    PyErr_SetString(PyExc_ValueError, "overlap checks must name arrays passed to the kernel");
    return -1;
}

static PyObject *signature_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *names_[] = {"names", "forms", "argv", "status_slot", "status_count", "overlaps", "new_arrays",
                             "outputs", "driver", "blocks", "run", "status_error", "keep", NULL};
    PyObject *names, *forms, *overlaps, *new_arrays, *outputs, *run, *status_error, *keep;
    Py_buffer argv;
    Py_ssize_t status_slot, status_count;
    unsigned long long driver;
    long long blocks;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O!O!y*nnO!O!O!KLOOO", names_, &PyTuple_Type, &names,
                                     &PyTuple_Type, &forms, &argv, &status_slot, &status_count, &PyTuple_Type,
                                     &overlaps, &PyTuple_Type, &new_arrays, &PyTuple_Type, &outputs, &driver,
                                     &blocks, &run, &status_error, &keep))
        return NULL;
    Signature *self = (Signature *)type->tp_alloc(type, 0);
    if (self == NULL) {
        PyBuffer_Release(&argv);
        return NULL;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(names);
    self->argv_len = argv.len / (Py_ssize_t)sizeof(int64_t);
    self->argv = PyMem_Malloc((size_t)argv.len + 1);
    self->keywords = PyMem_Calloc((size_t)count + 1, sizeof(Keyword));
    self->overlaps_len = PyTuple_GET_SIZE(overlaps);
    self->overlaps = PyMem_Calloc((size_t)self->overlaps_len + 1, sizeof(int64_t));
    if (self->argv == NULL || self->keywords == NULL || self->overlaps == NULL) {
        PyBuffer_Release(&argv);
        Py_DECREF(self);
        return PyErr_NoMemory();
    }
    memcpy(self->argv, argv.buf, (size_t)argv.len);
    PyBuffer_Release(&argv);
    self->status_count = status_count;
    self->status_words = self->argv_len - status_count;
    self->status_slot = status_slot;
    if (count > MAX_KEYWORDS || PyTuple_GET_SIZE(new_arrays) > MAX_NEW_ARRAYS || status_count != STATUS_WORDS ||
        self->status_words < 0 || status_slot < 0 || status_slot >= self->status_words || driver == 0) {
        PyErr_SetString(PyExc_ValueError, "a signature out of the native path's limits");
        goto fail;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        self->count = i + 1;
        if (PyTuple_GET_SIZE(forms) != count) {
            PyErr_SetString(PyExc_ValueError, "one form per name");
            goto fail;
        }
        if (parse_keyword(&self->keywords[i], PyTuple_GET_ITEM(names, i), PyTuple_GET_ITEM(forms, i),
                          self->status_words) < 0)
            goto fail;
    }
    for (Py_ssize_t i = 0; i < self->overlaps_len; i++) {
        self->overlaps[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(overlaps, i));
        if (self->overlaps[i] == -1 && PyErr_Occurred())
            goto fail;
    }
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(new_arrays); i++) {
        PyObject *item = PyTuple_GET_ITEM(new_arrays, i);
        if (!PyTuple_Check(item) || PyTuple_GET_SIZE(item) != 4) {
            PyErr_SetString(PyExc_TypeError, "a new array is (slot, shape, dtype, zeroed)");
            goto fail;
        }
        Py_ssize_t slot = PyLong_AsSsize_t(PyTuple_GET_ITEM(item, 0));
        if (slot < 0 || slot >= self->status_words) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "a new array's slot is outside the argument array");
            goto fail;
        }
    }
    if (PyTuple_GET_SIZE(outputs) < 1 || PyTuple_GET_SIZE(outputs) > MAX_KEYWORDS) {
        PyErr_SetString(PyExc_ValueError, "a call returns 1 to 64 outputs");
        goto fail;
    }
    if (check_overlaps(self) < 0)
        goto fail;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(outputs); i++) {
        PyObject *item = PyTuple_GET_ITEM(outputs, i);
        if (item == Py_None)
            continue;
        Py_ssize_t index = PyLong_AsSsize_t(item);
        if ((index == -1 && PyErr_Occurred()) || index >= count || -1 - index >= PyTuple_GET_SIZE(new_arrays)) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_ValueError, "an output names neither a keyword nor a new array");
            goto fail;
        }
    }
    self->new_arrays = Py_NewRef(new_arrays);
    self->outputs = Py_NewRef(outputs);
    self->driver = (DriverFn)(uintptr_t)driver;
    self->blocks = blocks;
    self->run = Py_NewRef(run);
    self->status_error = Py_NewRef(status_error);
    self->keep = Py_NewRef(keep);
    return (PyObject *)self;
fail:
    Py_DECREF(self);
    return NULL;
}

static PyTypeObject SignatureType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tilegrad.codegen._fastcall.Signature",
    .tp_doc = PyDoc_STR("One checked call signature: what a call must match, and how to fill its argument array."),
    .tp_basicsize = sizeof(Signature),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_new = signature_new,
    .tp_dealloc = (destructor)signature_dealloc,
    .tp_traverse = (traverseproc)signature_traverse,
    .tp_clear = (inquiry)signature_clear,
};

/* 1: the keyword arguments match the signature (values[] set, borrowed from kwargs); 0: they do
   not; -1: an error was raised. */
static int matches(Signature *s, PyObject *kwargs, PyObject **values) {
    Py_ssize_t pos = 0, i = 0;
    PyObject *key, *value;
    while (PyDict_Next(kwargs, &pos, &key, &value)) {
        if (i >= s->count) /* the dict grew while a comparison ran Python code */
            return 0;
        Keyword *kw = &s->keywords[i];
        if (key != kw->name) {
            int same = PyObject_RichCompareBool(key, kw->name, Py_EQ);
            if (same <= 0)
                return same;
        }
        if (kw->type == NULL) {
            if (Py_TYPE(value) != ndarray_type)
                return 0;
            ArrayFields *array = (ArrayFields *)value;
            if (array->nd != kw->nd ||
                memcmp(array->dimensions, kw->shape, (size_t)kw->nd * sizeof(Py_ssize_t)) != 0 ||
                memcmp(array->strides, kw->shape + kw->nd, (size_t)kw->nd * sizeof(Py_ssize_t)) != 0)
                return 0;
            if (array->descr != kw->value) {
                int same = PyObject_RichCompareBool(array->descr, kw->value, Py_EQ);
                if (same <= 0)
                    return same;
            }
        } else {
            if ((PyObject *)Py_TYPE(value) != kw->type)
                return 0;
            if (value != kw->value) {
                int same = PyObject_RichCompareBool(value, kw->value, Py_EQ);
                if (same < 0)
                    PyErr_Clear(); /* a value that does not compare: the checking path decides */
                if (same <= 0)
                    return 0;
            }
        }
        values[i++] = value;
    }
    return i == s->count;
}

static PyObject FALLBACK_; /* never dereferenced: only its address is compared */
#define FALLBACK (&FALLBACK_)

static char *data_of(PyObject *array) { return ((ArrayFields *)array)->data; }

/* Run the kernel on a call that matched `s`: a new reference to the result, NULL with an error
   raised, or FALLBACK when the call needs the checking path. */
static PyObject *run_signature(Signature *s, PyObject **values) {
    int64_t local[LOCAL_ARGV];
    int64_t *argv = s->argv_len <= LOCAL_ARGV ? local : PyMem_Malloc((size_t)s->argv_len * sizeof(int64_t));
    PyObject *made[MAX_NEW_ARRAYS];
    Py_ssize_t made_count = 0;
    PyObject *result = NULL;
    if (argv == NULL)
        return PyErr_NoMemory();
    memcpy(argv, s->argv, (size_t)s->argv_len * sizeof(int64_t));
    for (Py_ssize_t i = 0; i < s->count; i++) {
        Keyword *kw = &s->keywords[i];
        if (kw->slot < 0)
            continue;
        if (kw->written && !(((ArrayFields *)values[i])->flags & ARRAY_WRITEABLE)) {
            result = FALLBACK;
            goto done;
        }
        argv[kw->slot] = (int64_t)(intptr_t)data_of(values[i]);
    }
    /* per written array: index, lo, hi, count, then (index, lo, hi) of each other array */
    for (Py_ssize_t at = 0; at + 4 <= s->overlaps_len;) {
        int64_t *check = s->overlaps + at;
        intptr_t start = (intptr_t)data_of(values[check[0]]);
        for (int64_t j = 0; j < check[3]; j++) {
            int64_t *other = check + 4 + 3 * j;
            intptr_t other_start = (intptr_t)data_of(values[other[0]]);
            if (start + check[1] < other_start + other[2] && other_start + other[1] < start + check[2]) {
                result = FALLBACK;
                goto done;
            }
        }
        at += 4 + 3 * check[3];
    }
    for (; made_count < PyTuple_GET_SIZE(s->new_arrays); made_count++) {
        PyObject *form = PyTuple_GET_ITEM(s->new_arrays, made_count);
        PyObject *allocate = PyObject_IsTrue(PyTuple_GET_ITEM(form, 3)) ? new_zeros : new_empty;
        PyObject *array = PyObject_CallFunctionObjArgs(allocate, PyTuple_GET_ITEM(form, 1), PyTuple_GET_ITEM(form, 2),
                                                       NULL);
        if (array == NULL)
            goto done;
        made[made_count] = array;
        if (Py_TYPE(array) != ndarray_type) {
            made_count++;
            PyErr_SetString(PyExc_TypeError, "the array allocator returned something else");
            goto done;
        }
        argv[PyLong_AsSsize_t(PyTuple_GET_ITEM(form, 0))] = (int64_t)(intptr_t)data_of(array);
    }
    argv[s->status_slot] = (int64_t)(intptr_t)(argv + s->status_words);
    if (s->run == Py_None) {
        s->driver(argv, NULL, 0, s->blocks, 0, 1, NULL, NULL);
    } else {
        PyObject *ran = PyObject_CallFunction(s->run, "L", (long long)(intptr_t)argv);
        if (ran == NULL)
            goto done;
        Py_DECREF(ran);
    }
    if (argv[s->status_words] != 0) {
        PyObject *words = PyTuple_New(s->status_count);
        if (words == NULL)
            goto done;
        for (Py_ssize_t i = 0; i < s->status_count; i++) {
            PyObject *word = PyLong_FromLongLong(argv[s->status_words + i]);
            if (word == NULL) {
                Py_DECREF(words);
                goto done;
            }
            PyTuple_SET_ITEM(words, i, word);
        }
        PyObject *error = PyObject_CallOneArg(s->status_error, words);
        Py_DECREF(words);
        if (error != NULL) {
            PyErr_SetObject((PyObject *)Py_TYPE(error), error);
            Py_DECREF(error);
        }
        goto done;
    }
    Py_ssize_t outputs = PyTuple_GET_SIZE(s->outputs);
    PyObject *items[MAX_KEYWORDS + MAX_NEW_ARRAYS];
    for (Py_ssize_t i = 0; i < outputs && i < MAX_KEYWORDS + MAX_NEW_ARRAYS; i++) {
        PyObject *which = PyTuple_GET_ITEM(s->outputs, i);
        Py_ssize_t index = which == Py_None ? 0 : PyLong_AsSsize_t(which);
        items[i] = which == Py_None ? Py_None : index >= 0 ? values[index] : made[-1 - index];
    }
    if (outputs == 1) {
        result = Py_NewRef(items[0]);
    } else {
        result = PyTuple_New(outputs);
        if (result != NULL)
            for (Py_ssize_t i = 0; i < outputs; i++)
                PyTuple_SET_ITEM(result, i, Py_NewRef(items[i]));
    }
done:
    for (Py_ssize_t i = 0; i < made_count; i++)
        Py_DECREF(made[i]);
    if (argv != local)
        PyMem_Free(argv);
    return result;
}

/* ---- Dispatcher ------------------------------------------------------------------------------- */

typedef struct {
    PyObject_HEAD
    PyObject *signatures; /* list, most recently bound first */
} Dispatcher;

static PyObject *dispatcher_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    Dispatcher *self = (Dispatcher *)type->tp_alloc(type, 0);
    if (self == NULL)
        return NULL;
    self->signatures = PyList_New(0);
    if (self->signatures == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int dispatcher_traverse(Dispatcher *self, visitproc visit, void *arg) {
    Py_VISIT(self->signatures);
    return 0;
}

static int dispatcher_clear(Dispatcher *self) {
    Py_CLEAR(self->signatures);
    return 0;
}

static void dispatcher_dealloc(Dispatcher *self) {
    PyObject_GC_UnTrack(self);
    dispatcher_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *dispatcher_call(Dispatcher *self, PyObject *args, PyObject *kwargs) {
    PyObject *values[MAX_KEYWORDS];
    if (native_path_on && PyTuple_GET_SIZE(args) == 0 && kwargs != NULL && PyDict_GET_SIZE(kwargs) <= MAX_KEYWORDS &&
        self->signatures != NULL) {
        Py_ssize_t count = PyDict_GET_SIZE(kwargs);
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(self->signatures); i++) {
            Signature *s = (Signature *)PyList_GET_ITEM(self->signatures, i);
            if (s->count != count)
                continue;
            Py_INCREF(s);
            int matched = matches(s, kwargs, values);
            PyObject *result = matched > 0 ? run_signature(s, values) : NULL;
            Py_DECREF(s);
            if (matched < 0 || (matched > 0 && result != FALLBACK))
                return result;
            if (matched > 0)
                break;
        }
    }
    PyObject *checked = PyObject_GetAttrString((PyObject *)self, "_call_checked");
    if (checked == NULL)
        return NULL;
    PyObject *result = PyObject_Call(checked, args, kwargs);
    Py_DECREF(checked);
    return result;
}

static PyObject *dispatcher_bind(Dispatcher *self, PyObject *signature) {
    if (self->signatures == NULL)
        Py_RETURN_NONE;
    if (!PyObject_TypeCheck(signature, &SignatureType)) {
        PyErr_SetString(PyExc_TypeError, "bind takes a Signature");
        return NULL;
    }
    if (PyList_Insert(self->signatures, 0, signature) < 0)
        return NULL;
    Py_ssize_t count = PyList_GET_SIZE(self->signatures);
    if (count > MAX_SIGNATURES && PyList_SetSlice(self->signatures, MAX_SIGNATURES, count, NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *dispatcher_forget(Dispatcher *self, PyObject *unused) {
    if (self->signatures != NULL && PyList_SetSlice(self->signatures, 0, PyList_GET_SIZE(self->signatures), NULL) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *dispatcher_count(Dispatcher *self, void *unused) {
    return PyLong_FromSsize_t(self->signatures == NULL ? 0 : PyList_GET_SIZE(self->signatures));
}

static PyMethodDef dispatcher_methods[] = {
    {"_bind_signature", (PyCFunction)dispatcher_bind, METH_O,
     PyDoc_STR("Run later calls that match this Signature natively (the most recent first; at most 16 kept).")},
    {"_forget_signatures", (PyCFunction)dispatcher_forget, METH_NOARGS,
     PyDoc_STR("Send every later call through _call_checked until it binds again.")},
    {NULL}};

static PyGetSetDef dispatcher_getset[] = {
    {"_signature_count", (getter)dispatcher_count, NULL, PyDoc_STR("How many signatures are bound."), NULL},
    {NULL}};

static PyTypeObject DispatcherType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tilegrad.codegen._fastcall.Dispatcher",
    .tp_doc = PyDoc_STR("A callable that runs calls matching a bound Signature natively and hands every other "
                        "call to its _call_checked method."),
    .tp_basicsize = sizeof(Dispatcher),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .tp_new = dispatcher_new,
    .tp_dealloc = (destructor)dispatcher_dealloc,
    .tp_traverse = (traverseproc)dispatcher_traverse,
    .tp_clear = (inquiry)dispatcher_clear,
    .tp_call = (ternaryfunc)dispatcher_call,
    .tp_methods = dispatcher_methods,
    .tp_getset = dispatcher_getset,
};

/* ---- module ----------------------------------------------------------------------------------- */

static PyObject *array_fields(PyObject *module, PyObject *array) {
    if (ndarray_type == NULL || !PyObject_TypeCheck(array, ndarray_type)) {
        PyErr_SetString(PyExc_TypeError, "array_fields takes a numpy array after configure()");
        return NULL;
    }
    ArrayFields *a = (ArrayFields *)array;
    PyObject *shape = PyTuple_New(a->nd), *strides = PyTuple_New(a->nd);
    if (shape == NULL || strides == NULL) {
        Py_XDECREF(shape);
        Py_XDECREF(strides);
        return NULL;
    }
    for (int i = 0; i < a->nd; i++) {
        PyTuple_SET_ITEM(shape, i, PyLong_FromSsize_t(a->dimensions[i]));
        PyTuple_SET_ITEM(strides, i, PyLong_FromSsize_t(a->strides[i]));
    }
    return Py_BuildValue("(KNNOO)", (unsigned long long)(uintptr_t)a->data, shape, strides, a->descr,
                         (a->flags & ARRAY_WRITEABLE) ? Py_True : Py_False);
}

static PyObject *configure(PyObject *module, PyObject *args) {
    PyObject *type, *empty, *zeros;
    if (!PyArg_ParseTuple(args, "O!OO", &PyType_Type, &type, &empty, &zeros))
        return NULL;
    Py_XSETREF(ndarray_type, (PyTypeObject *)Py_NewRef(type));
    Py_XSETREF(new_empty, Py_NewRef(empty));
    Py_XSETREF(new_zeros, Py_NewRef(zeros));
    Py_RETURN_NONE;
}

static PyObject *set_native_path(PyObject *module, PyObject *on) {
    int value = PyObject_IsTrue(on);
    if (value < 0)
        return NULL;
    if (value && ndarray_type == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() first");
        return NULL;
    }
    native_path_on = value;
    Py_RETURN_NONE;
}

static PyMethodDef module_methods[] = {
    {"configure", configure, METH_VARARGS,
     PyDoc_STR("configure(ndarray, empty, zeros): numpy's array type and allocators (the native path stays off).")},
    {"set_native_path", set_native_path, METH_O,
     PyDoc_STR("Whether bound signatures run natively (off: every call is checked).")},
    {"array_fields", array_fields, METH_O,
     PyDoc_STR("(data, shape, strides, dtype, writeable) of an array as this module reads them.")},
    {NULL}};

static struct PyModuleDef module_def = {PyModuleDef_HEAD_INIT, "_fastcall",
                                        PyDoc_STR("The native call path of tilegrad kernels."), -1, module_methods};

PyMODINIT_FUNC PyInit__fastcall(void) {
    if (PyType_Ready(&SignatureType) < 0 || PyType_Ready(&DispatcherType) < 0)
        return NULL;
    PyObject *module = PyModule_Create(&module_def);
    if (module == NULL)
        return NULL;
    if (PyModule_AddIntConstant(module, "STATUS_WORDS", STATUS_WORDS) < 0 ||
        PyModule_AddObjectRef(module, "Signature", (PyObject *)&SignatureType) < 0 ||
        PyModule_AddObjectRef(module, "Dispatcher", (PyObject *)&DispatcherType) < 0) {
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
