#include "core/base/fault_injection_env.h"

#include <cerrno>

namespace dedupv1 {
namespace {

class FaultFile : public File {
 public:
  FaultFile(FaultInjectionEnv* env, std::unique_ptr<File> base) : env_(env), base_(std::move(base)) {}

  Status Read(uint64_t offset, size_t n, void* buf) override {
    FaultInjectionEnv::Fault fault;
    size_t torn;
    if (env_->Check(FaultInjectionEnv::Op::kRead, path(), &fault, &torn)) {
      return FaultInjectionEnv::FaultStatus(fault, "read " + path());
    }
    return base_->Read(offset, n, buf);
  }

  Status Write(uint64_t offset, const void* data, size_t n) override {
    FaultInjectionEnv::Fault fault;
    size_t torn;
    if (env_->Check(FaultInjectionEnv::Op::kWrite, path(), &fault, &torn)) {
      if (fault == FaultInjectionEnv::Fault::kTorn) {
        size_t keep = torn < n ? torn : n;
        if (keep > 0) base_->Write(offset, data, keep);
        return FaultInjectionEnv::FaultStatus(FaultInjectionEnv::Fault::kEIO,
                                              "torn write " + path());
      }
      return FaultInjectionEnv::FaultStatus(fault, "write " + path());
    }
    return base_->Write(offset, data, n);
  }

  Status Sync() override {
    FaultInjectionEnv::Fault fault;
    size_t torn;
    if (env_->Check(FaultInjectionEnv::Op::kSync, path(), &fault, &torn)) {
      return FaultInjectionEnv::FaultStatus(fault, "sync " + path());
    }
    return base_->Sync();
  }

  Status Size(uint64_t* size) override { return base_->Size(size); }
  Status Truncate(uint64_t size) override { return base_->Truncate(size); }
  Status Allocate(uint64_t offset, uint64_t len) override {
    FaultInjectionEnv::Fault fault;
    size_t torn;
    if (env_->Check(FaultInjectionEnv::Op::kAllocate, path(), &fault, &torn)) {
      return FaultInjectionEnv::FaultStatus(fault, "allocate " + path());
    }
    return base_->Allocate(offset, len);
  }
  const std::string& path() const override { return base_->path(); }

 private:
  FaultInjectionEnv* env_;
  std::unique_ptr<File> base_;
};

}  // namespace

void FaultInjectionEnv::AddRule(const Rule& rule) {
  std::lock_guard<std::mutex> l(mu_);
  rules_.push_back(ActiveRule{rule, 0, 0});
}

void FaultInjectionEnv::ClearRules() {
  std::lock_guard<std::mutex> l(mu_);
  rules_.clear();
}

bool FaultInjectionEnv::Check(Op op, const std::string& path, Fault* fault, size_t* torn_bytes) {
  std::lock_guard<std::mutex> l(mu_);
  for (auto& r : rules_) {
    if (r.rule.op != op) continue;
    if (!r.rule.path_substring.empty() && path.find(r.rule.path_substring) == std::string::npos) {
      continue;
    }
    if (r.seen++ < r.rule.skip) continue;
    if (r.rule.count >= 0 && r.fired >= r.rule.count) continue;
    r.fired++;
    fired_++;
    *fault = r.rule.fault;
    *torn_bytes = r.rule.torn_bytes;
    return true;
  }
  return false;
}

Status FaultInjectionEnv::FaultStatus(Fault fault, const std::string& what) {
  if (fault == Fault::kENOSPC) return Status::FromErrno(ENOSPC, what + " (injected)");
  return Status::FromErrno(EIO, what + " (injected)");
}

Status FaultInjectionEnv::OpenFile(const std::string& path, OpenMode mode,
                                   std::unique_ptr<File>* file) {
  Fault fault;
  size_t torn;
  if (Check(Op::kOpen, path, &fault, &torn)) return FaultStatus(fault, "open " + path);
  std::unique_ptr<File> base;
  DEDUPV1_RETURN_IF_ERROR(base_->OpenFile(path, mode, &base));
  file->reset(new FaultFile(this, std::move(base)));
  return Status::OK();
}

Status FaultInjectionEnv::LinkFile(const std::string& from, const std::string& to) {
  Fault fault;
  size_t torn;
  if (Check(Op::kRename, to, &fault, &torn)) return FaultStatus(fault, "link " + to);
  return base_->LinkFile(from, to);
}

Status FaultInjectionEnv::RenameFile(const std::string& from, const std::string& to) {
  Fault fault;
  size_t torn;
  if (Check(Op::kRename, to, &fault, &torn)) return FaultStatus(fault, "rename " + to);
  return base_->RenameFile(from, to);
}

}  // namespace dedupv1
