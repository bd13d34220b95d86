// Force-included first in every translation unit of the TSan build (cmake/HbHelpers.cmake).
//
// Debian's protobuf headers give MapFieldBase two extra members (seq1_, seq2_) when
// __SANITIZE_THREAD__ is defined, but Debian's libprotobuf is built without it: in a TSan build
// every message with a map field then disagrees with the library on MapFieldBase's layout and
// crashes in MapFieldBase::Destruct (healthbench.env.v1.SubmitResponse.tag_scores). Reading
// map_field.h once with the macro hidden gives the library's layout; its include guard keeps it
// that way for the rest of the translation unit. <cstddef> comes first so that libstdc++'s
// c++config.h still sees __SANITIZE_THREAD__ (_GLIBCXX_TSAN). No other protobuf header reads it.
#ifndef HB_TESTS_TESTING_TSAN_PROTOBUF_MAP_ABI_H_
#define HB_TESTS_TESTING_TSAN_PROTOBUF_MAP_ABI_H_

#include <cstddef>

#pragma push_macro("__SANITIZE_THREAD__")
#undef __SANITIZE_THREAD__
#include "google/protobuf/map_field.h"
#pragma pop_macro("__SANITIZE_THREAD__")

#endif  // HB_TESTS_TESTING_TSAN_PROTOBUF_MAP_ABI_H_
