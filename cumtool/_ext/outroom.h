/* Where a writer's loop (_csvtext.assemble, _jsonl.write_lines) puts its text: a new bytes
 * object, or the caller's `into`, a bytearray it reuses batch after batch. A new object
 * each batch was memory the system maps, faults in and unmaps again: on 2M x 8 numbers
 * to CSV, some 60,000 page faults of the kernel's time (benchmarks/RESULTS-cores.md). A
 * bytearray that a view still holds is not written over (the text before it may still be
 * read): a new bytes object is made instead. Needs Python.h. */
#ifndef CUMTOOL_OUTROOM_H
#define CUMTOOL_OUTROOM_H

/* -1 with a TypeError unless `into` is None or a bytearray. */
static int outroom_check(PyObject *into, const char *name)
{
    if (into == Py_None || PyByteArray_CheckExact(into))
        return 0;
    PyErr_Format(PyExc_TypeError, "%s: into must be a bytearray or None", name);
    return -1;
}

/* Room for `size` bytes (the GIL held): at the start of `into` where it is a bytearray no
   view holds (grown to `size`, never shrunk), else in a new bytes object (*made). NULL
   with an exception. */
static char *outroom_take(PyObject *into, Py_ssize_t size, PyObject **made)
{
    *made = NULL;
    if (into != Py_None && ((PyByteArrayObject *)into)->ob_exports == 0) {
        if (PyByteArray_GET_SIZE(into) < size && PyByteArray_Resize(into, size) < 0)
            return NULL;
        return PyByteArray_AS_STRING(into);
    }
    *made = PyBytes_FromStringAndSize(NULL, size);
    return *made != NULL ? PyBytes_AS_STRING(*made) : NULL;
}

/* The writer's result, `used` bytes written in the room: the new bytes object cut to
   them, else their count (written into `into`). */
static PyObject *outroom_result(PyObject *made, Py_ssize_t used)
{
    if (made == NULL)
        return PyLong_FromSsize_t(used);
    if (_PyBytes_Resize(&made, used) < 0)
        return NULL;
    return made;
}

#endif
