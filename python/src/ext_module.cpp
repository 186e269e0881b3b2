// The _lmkit extension module: error mapping, shared conversions and the module definition.
#include <Python.h>

#include <nanobind/stl/string.h>

#include "ext.h"
#include "lmkit/common/data_dir.h"
#include "lmkit/version.h"

namespace lmkit::py {

void Raise(const Status& status) {
  const std::string msg = status.ToString();
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

nb::list IdList(const uint32_t* ids, size_t count) {
  PyObject* list = PyList_New(static_cast<Py_ssize_t>(count));
  if (list == nullptr) throw nb::python_error();
  for (size_t i = 0; i < count; ++i) {
    PyObject* v = PyLong_FromUnsignedLong(ids[i]);
    if (v == nullptr) {
      Py_DECREF(list);
      throw nb::python_error();
    }
    PyList_SET_ITEM(list, static_cast<Py_ssize_t>(i), v);
  }
  return nb::steal<nb::list>(list);
}

std::string_view Utf8(nb::handle str) {
  Py_ssize_t n = 0;
  const char* p = PyUnicode_AsUTF8AndSize(str.ptr(), &n);
  if (p == nullptr) throw nb::python_error();
  return {p, static_cast<size_t>(n)};
}

}  // namespace lmkit::py

NB_MODULE(_lmkit, m) {
  m.doc() = "lmkit's core library (C++), bound for the lmkit Python package";
  m.attr("__version__") = LMKIT_VERSION;
  m.def(
      "_set_data_dir", [](const std::string& dir) { lmkit::SetHostDataDir(dir); },
      "Where the package's copy of lmkit's data/ lives (tokenizers, presets, GPU table).");
  lmkit::py::RegisterBpe(m);
  lmkit::py::RegisterCli(m);
}
