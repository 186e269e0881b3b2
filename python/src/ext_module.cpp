// The _lmkit extension module: error mapping, shared conversions and the module definition.
#include <Python.h>
#include <nanobind/stl/string.h>

#include <cstdlib>

#include "ext.h"
#include "lmkit/common/data_dir.h"
#include "lmkit/version.h"

namespace lmkit::py {

void Raise(const Status& status, const std::function<std::string(std::string_view)>& keyword) {
  const std::string msg = keyword ? status.ToString(keyword) : status.ToString();
  PyObject* type = PyExc_RuntimeError;
  switch (status.code()) {
    case ErrorCode::kInvalidInput:
    case ErrorCode::kInvalidArgument:
    case ErrorCode::kUnsupported:
      type = PyExc_ValueError;
      break;
    case ErrorCode::kNotFound:
      type = PyExc_FileNotFoundError;
      break;
    case ErrorCode::kIo:
      type = PyExc_OSError;
      break;
    case ErrorCode::kCancelled:
      type = PyExc_KeyboardInterrupt;
      break;
    case ErrorCode::kOk:
    case ErrorCode::kInternal:
      break;
  }
  PyErr_SetString(type, msg.c_str());
  throw nb::python_error();
}

nb::dict ToDict(const Json& doc) {
  const std::string text = DumpJson(doc, -1);
  return nb::cast<nb::dict>(nb::module_::import_("json").attr("loads")(nb::str(text.data(), text.size())));
}

namespace {

// Token ids as Python ints, made once per id and shared: allocating a new int per id took a third of encode()'s time
// on 1 MB documents (110 MB/s into a NumPy array, 70 MB/s into a list). Ints are immutable, so sharing is invisible.
// Ids below kCachedIds are kept (at most 2 MiB of pointers plus the ints actually seen); larger ones are made per use.
// Touched with the GIL held only.
constexpr uint32_t kCachedIds = uint32_t{1} << 18;
PyObject** g_ints = nullptr;

PyObject* IdObject(uint32_t id) {
  if (id >= kCachedIds) return PyLong_FromUnsignedLong(id);
  if (g_ints == nullptr) g_ints = static_cast<PyObject**>(std::calloc(kCachedIds, sizeof(PyObject*)));
  if (g_ints == nullptr) return PyLong_FromUnsignedLong(id);
  PyObject*& v = g_ints[id];
  if (v == nullptr) {
    v = PyLong_FromUnsignedLong(id);
    if (v == nullptr) return nullptr;
  }
  Py_INCREF(v);
  return v;
}

}  // namespace

nb::list IdList(const uint32_t* ids, size_t count) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(count));
  if (list == nullptr) throw nb::python_error();
  for (size_t i = 0; i < count; ++i) {
    PyObject* v = IdObject(ids[i]);
    if (v == nullptr) {
      Py_DECREF(list);
      throw nb::python_error();
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), v);
  }
  return nb::steal<nb::list>(list);
}

Utf8Text::Utf8Text(nb::handle str) {
  if (!PyUnicode_Check(str.ptr())) {
    PyErr_Format(PyExc_TypeError, "text must be str, not %s", Py_TYPE(str.ptr())->tp_name);
    throw nb::python_error();
  }
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(str.ptr(), &n);
  if (p == nullptr) {
    if (!PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) throw nb::python_error();
    PyErr_Clear();
    // Through UTF-16, where a lone surrogate passes, then back with each one replaced.
    PyObject* utf16 = PyUnicode_AsEncodedString(str.ptr(), "utf-16", "surrogatepass");
    if (utf16 == nullptr) throw nb::python_error();
    PyObject* clean = PyUnicode_Decode(PyBytes_AS_STRING(utf16), PyBytes_GET_SIZE(utf16), "utf-16", "replace");
    Py_DECREF(utf16);
    if (clean == nullptr) throw nb::python_error();
    owner = nb::steal(clean);
    p = PyUnicode_AsUTF8AndSize(clean, &n);
    if (p == nullptr) throw nb::python_error();
  }
  view = {p, static_cast<size_t>(n)};
}

}  // namespace lmkit::py

NB_MODULE(_lmkit, m) {
  m.doc() = "lmkit's core library (C++), bound for the lmkit Python package";
  m.attr("__version__") = LMKIT_VERSION;
  m.def(
      "_set_data_dir", [](const std::string& dir) { lmkit::SetHostDataDir(dir); },
      "Where the package's copy of lmkit's data/ lives (tokenizers, presets, GPU table).");
  lmkit::py::RegisterBpe(m);
  lmkit::py::RegisterReports(m);
}
