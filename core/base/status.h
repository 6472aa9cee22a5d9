// Status is the result of an operation that can fail: OK, or a code plus a
// message that names what went wrong (the file, the key, the object id).
// Errors cross module borders as Status values, never as exceptions.
#pragma once

#include <string>
#include <string_view>
#include <utility>

namespace dedupv1 {

class Status {
 public:
  enum class Code {
    kOk = 0,
    kNotFound,
    kCorruption,       // a checksum or format check failed: never return the data
    kIOError,          // the operating system reported an error
    kInvalidArgument,  // bad input: config, offset, size
    kNoSpace,          // disk full, chunk index full, container store full
    kBusy,             // try again later (e.g. a limit is reached and waiting is not allowed)
    kAborted,          // the operation was cancelled (shutdown)
    kNotSupported,
  };

  Status() = default;
  static Status OK() { return Status(); }
  static Status NotFound(std::string_view msg) { return Status(Code::kNotFound, msg); }
  static Status Corruption(std::string_view msg) { return Status(Code::kCorruption, msg); }
  static Status IOError(std::string_view msg) { return Status(Code::kIOError, msg); }
  static Status InvalidArgument(std::string_view msg) { return Status(Code::kInvalidArgument, msg); }
  static Status NoSpace(std::string_view msg) { return Status(Code::kNoSpace, msg); }
  static Status Busy(std::string_view msg) { return Status(Code::kBusy, msg); }
  static Status Aborted(std::string_view msg) { return Status(Code::kAborted, msg); }
  static Status NotSupported(std::string_view msg) { return Status(Code::kNotSupported, msg); }
  // Maps an errno value from a failed system call to a Status naming |context|.
  static Status FromErrno(int err, std::string_view context);

  bool ok() const { return code_ == Code::kOk; }
  bool IsNotFound() const { return code_ == Code::kNotFound; }
  bool IsCorruption() const { return code_ == Code::kCorruption; }
  bool IsIOError() const { return code_ == Code::kIOError; }
  bool IsInvalidArgument() const { return code_ == Code::kInvalidArgument; }
  bool IsNoSpace() const { return code_ == Code::kNoSpace; }
  bool IsBusy() const { return code_ == Code::kBusy; }
  bool IsAborted() const { return code_ == Code::kAborted; }
  bool IsNotSupported() const { return code_ == Code::kNotSupported; }
  Code code() const { return code_; }
  const std::string& message() const { return msg_; }

  // "OK" or "<code name>: <message>".
  std::string ToString() const;

  // Returns a copy whose message is "<prefix>: <message>".
  Status WithContext(std::string_view prefix) const;

 private:
  Status(Code code, std::string_view msg) : code_(code), msg_(msg) {}
  Code code_ = Code::kOk;
  std::string msg_;
};

}  // namespace dedupv1

// Returns from the enclosing function if |expr| is not OK.
#define DEDUPV1_RETURN_IF_ERROR(expr)                 \
  do {                                                \
    ::dedupv1::Status _st = (expr);                   \
    if (!_st.ok()) return _st;                        \
  } while (0)
