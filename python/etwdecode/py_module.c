/* py_module.c - the etwdecode._native module: its functions, types and
 * exceptions. */
#include "py_native.h"

PyObject *EtwError;
PyObject *EtwWarning;

const char *const k_key_names[K_COUNT_] = {
    "time", "provider", "provider_guid", "event", "id", "version", "level", "opcode", "task",
    "channel", "keywords", "pid", "process", "tid", "cpu", "data_len", "activity_id", "related_activity_id",
    "container_id", "fields", "stack", "error", "raw", "unsupported", "stack_match_id", "more_stacks",
    "stack_key", "stack_key_match_id", "more_stack_keys", "match_id", "file",
};
PyObject *g_keys[K_COUNT_];

static PyMethodDef native_functions[] = {
    {"profile", (PyCFunction)(void (*)(void))native_profile, METH_VARARGS | METH_KEYWORDS,
     "The profile's samples: [(stack, pid, tid, process, weight, count, frames), ...]."},
    {"_report", (PyCFunction)(void (*)(void))native_report, METH_VARARGS | METH_KEYWORDS,
     "_report(reader, kind, symbols=None, top=0): (the report's JSON text, its CSV header line)."},
    {"traces", native_traces, METH_O, "traces(path): the names of the traces an input holds (an archive's entries)"},
    {NULL, NULL, 0, NULL},
};

static PyModuleDef native_module = {
    PyModuleDef_HEAD_INIT, .m_name = "etwdecode._native", .m_methods = native_functions,
    .m_doc = "libetwdecode for Python: the native half of the etwdecode package.", .m_size = -1,
};

PyMODINIT_FUNC PyInit__native(void) {
    for (int i = 0; i < K_COUNT_; i++) {
        g_keys[i] = PyUnicode_InternFromString(k_key_names[i]);
        if (!g_keys[i]) return NULL;
    }
    if (PyType_Ready(&ReaderType) < 0 || PyType_Ready(&FieldsType) < 0 ||
        PyType_Ready(&FrameBufType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&native_module);
    if (!m) return NULL;
    EtwError = PyErr_NewExceptionWithDoc("etwdecode.Error",
                                         "A trace or manifest that cannot be read: the message names the file "
                                         "and what is wrong.",
                                         PyExc_ValueError, NULL);
    EtwWarning = PyErr_NewExceptionWithDoc("etwdecode.DamageWarning",
                                           "Damaged data skipped while reading (the message names the file and "
                                           "offset); reading goes on.",
                                           PyExc_UserWarning, NULL);
    if (!EtwError || !EtwWarning) return NULL;
    Py_INCREF(&ReaderType);
    Py_INCREF(&FieldsType);
    if (PyModule_AddObject(m, "Reader", (PyObject *)&ReaderType) < 0 ||
        PyModule_AddObject(m, "Fields", (PyObject *)&FieldsType) < 0 ||
        PyModule_AddObject(m, "Error", EtwError) < 0 || PyModule_AddObject(m, "DamageWarning", EtwWarning) < 0 ||
        PyModule_AddStringConstant(m, "library_version", etw_version_string()) < 0)
        return NULL;
    Py_INCREF(EtwError);
    Py_INCREF(EtwWarning);
    return m;
}
