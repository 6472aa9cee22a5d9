#include "core/base/status.h"

#include <cerrno>
#include <cstring>
#include <string>

namespace dedupv1 {

Status Status::FromErrno(int err, std::string_view context) {
  std::string msg(context);
  msg += ": ";
  msg += std::strerror(err);
  if (err == ENOSPC || err == EDQUOT) return NoSpace(msg);
  if (err == ENOENT) return NotFound(msg);
  if (err == EINVAL) return InvalidArgument(msg);
  return IOError(msg);
}

std::string Status::ToString() const {
  const char* name = "OK";
  switch (code_) {
    case Code::kOk: return "OK";
    case Code::kNotFound: name = "not found"; break;
    case Code::kCorruption: name = "corruption"; break;
    case Code::kIOError: name = "I/O error"; break;
    case Code::kInvalidArgument: name = "invalid argument"; break;
    case Code::kNoSpace: name = "no space"; break;
    case Code::kBusy: name = "busy"; break;
    case Code::kAborted: name = "aborted"; break;
    case Code::kNotSupported: name = "not supported"; break;
  }
  return std::string(name) + ": " + msg_;
}

Status Status::WithContext(std::string_view prefix) const {
  if (ok()) return *this;
  std::string msg(prefix);
  msg += ": ";
  msg += msg_;
  return Status(code_, msg);
}

}  // namespace dedupv1
