// The C API (core/engine/dedupv1_c.h) over DedupSystem and Volume: status codes out,
// messages into the caller's buffer, no exceptions across the boundary.
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>

#include "core/engine/c_api_internal.h"
#include "core/engine/dedup_system.h"
#include "core/engine/dedupv1_c.h"

struct dedupv1_system {
  std::unique_ptr<dedupv1::DedupSystem> system;
};

struct dedupv1_volume {
  dedupv1::Volume* volume;
};

namespace {

using dedupv1::Status;

int Code(const Status& s) {
  switch (s.code()) {
    case Status::Code::kOk: return DEDUPV1_OK;
    case Status::Code::kInvalidArgument: return DEDUPV1_EINVAL;
    case Status::Code::kIOError: return DEDUPV1_EIO;
    case Status::Code::kCorruption: return DEDUPV1_ECORRUPT;
    case Status::Code::kNoSpace: return DEDUPV1_ENOSPC;
    case Status::Code::kNotFound: return DEDUPV1_ENOENT;
    case Status::Code::kBusy: return DEDUPV1_EBUSY;
    default: return DEDUPV1_EOTHER;
  }
}

int Report(const Status& s, char* err, size_t errlen) {
  if (!s.ok() && err != nullptr && errlen > 0) {
    std::snprintf(err, errlen, "%s", s.ToString().c_str());
  }
  return Code(s);
}

template <typename F>
int Guard(char* err, size_t errlen, F f) {
  try {
    return Report(f(), err, errlen);
  } catch (const std::exception& e) {
    return Report(Status::IOError(std::string("internal error: ") + e.what()), err, errlen);
  }
}

}  // namespace

namespace dedupv1 {
DedupSystem* SystemOf(dedupv1_system* sys) { return sys->system.get(); }
int ReportStatus(const Status& s, char* err, size_t errlen) { return Report(s, err, errlen); }
}  // namespace dedupv1

extern "C" {

int dedupv1_open(const char* config_path, const char* data_dir, dedupv1_system** sys, char* err,
                 size_t errlen) {
  return Guard(err, errlen, [&]() -> Status {
    if (config_path == nullptr || sys == nullptr) return Status::InvalidArgument("no config file given");
    std::unique_ptr<dedupv1::DedupSystem> s;
    DEDUPV1_RETURN_IF_ERROR(
        dedupv1::DedupSystem::OpenConfigFile(config_path, data_dir ? data_dir : "", dedupv1::Env::Default(), &s));
    *sys = new dedupv1_system{std::move(s)};
    return Status::OK();
  });
}

int dedupv1_close(dedupv1_system* sys, char* err, size_t errlen) {
  if (sys == nullptr) return DEDUPV1_OK;
  int r = Guard(err, errlen, [&] { return sys->system->Close(); });
  delete sys;
  return r;
}

int dedupv1_volume_open(dedupv1_system* sys, const char* name, dedupv1_volume** vol, char* err,
                        size_t errlen) {
  return Guard(err, errlen, [&]() -> Status {
    if (sys == nullptr || name == nullptr || vol == nullptr) return Status::InvalidArgument("no volume name given");
    dedupv1::Volume* v;
    DEDUPV1_RETURN_IF_ERROR(sys->system->GetVolume(name, &v));
    *vol = new dedupv1_volume{v};
    return Status::OK();
  });
}

void dedupv1_volume_close(dedupv1_volume* vol) { delete vol; }

uint64_t dedupv1_volume_size(const dedupv1_volume* vol) { return vol ? vol->volume->size() : 0; }

uint32_t dedupv1_volume_id(const dedupv1_volume* vol) { return vol ? vol->volume->id() : 0; }

void dedupv1_volume_uid(const dedupv1_volume* vol, uint8_t uid[16]) {
  const dedupv1::Id128 id = vol ? vol->volume->uid() : dedupv1::Id128{};
  std::memcpy(uid, id.data(), id.size());
}

int dedupv1_read(dedupv1_volume* vol, uint64_t offset, uint64_t length, void* buf, char* err,
                 size_t errlen) {
  return Guard(err, errlen, [&] { return vol->volume->Read(offset, length, static_cast<uint8_t*>(buf)); });
}

int dedupv1_write(dedupv1_volume* vol, uint64_t offset, uint64_t length, const void* buf, int fua,
                  char* err, size_t errlen) {
  return Guard(err, errlen, [&] {
    return vol->volume->Write(offset, length, static_cast<const uint8_t*>(buf), fua != 0);
  });
}

int dedupv1_unmap(dedupv1_volume* vol, uint64_t offset, uint64_t length, char* err, size_t errlen) {
  return Guard(err, errlen, [&] { return vol->volume->Unmap(offset, length); });
}

int dedupv1_sync(dedupv1_volume* vol, char* err, size_t errlen) {
  return Guard(err, errlen, [&] { return vol->volume->Sync(); });
}

int dedupv1_mapped(dedupv1_volume* vol, uint64_t offset, uint64_t length, uint64_t* run, char* err,
                   size_t errlen) {
  bool mapped = false;
  int r = Guard(err, errlen, [&] { return vol->volume->IsMapped(offset, length, &mapped, run); });
  if (r != DEDUPV1_OK) return r;
  return mapped ? 1 : 0;
}

}  // extern "C"
