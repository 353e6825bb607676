// A value or the Error that says why there is none: the return type of a
// probe whose failure is an expected outcome for some callers (a file that
// may not be an ELF we read, a blob that may not parse) and fatal for
// others. Callers that can do without the value test it; the others call
// value(), which throws the carried Error, so the error is still thrown by
// the code that gave up on it and caught only in main.
//
//   Expected<ElfFile> elf = ElfFile::TryOpen(path);
//   if (!elf) return std::nullopt;     // expected: skip this file
//   ElfFile file = std::move(elf).value();  // or: fatal, throws the Error
#pragma once

#include <utility>
#include <variant>

#include "base/error.h"

namespace goheap2pprof {

template <typename T>
class [[nodiscard]] Expected {
 public:
  Expected(T value) : v_(std::in_place_index<0>, std::move(value)) {}      // NOLINT: implicit
  Expected(Error error) : v_(std::in_place_index<1>, std::move(error)) {}  // NOLINT: implicit

  bool has_value() const { return v_.index() == 0; }
  explicit operator bool() const { return has_value(); }

  // The value; throws the Error if there is none.
  T& value() & {
    ThrowIfError();
    return std::get<0>(v_);
  }
  const T& value() const& {
    ThrowIfError();
    return std::get<0>(v_);
  }
  T&& value() && {
    ThrowIfError();
    return std::get<0>(std::move(v_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  // Only when !has_value().
  const Error& error() const { return std::get<1>(v_); }

 private:
  void ThrowIfError() const {
    if (v_.index() == 1) throw std::get<1>(v_);
  }

  std::variant<T, Error> v_;
};

}  // namespace goheap2pprof
