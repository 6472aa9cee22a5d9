#include "target/monitor/monitor_identity.h"

#include <filesystem>
#include <system_error>

#include <nlohmann/json.hpp>

#include "core/base/env.h"
#include "core/base/identity.h"

namespace dedupv1 {
namespace {

bool SamePath(const std::string& a, const std::string& b) {
  std::error_code ec1, ec2;
  const auto ca = std::filesystem::weakly_canonical(a, ec1), cb = std::filesystem::weakly_canonical(b, ec2);
  return ec1 || ec2 ? a == b : ca == cb;
}

}  // namespace

std::string MonitorIdentity::Describe() const {
  return "data dir " + data_dir + " (instance " + instance_id + ", pid " + std::to_string(pid) + ")";
}

std::string ExpectedInstance::Describe() const {
  std::string out = data_dir.empty() ? "instance " + instance_id : "data dir " + data_dir;
  if (!data_dir.empty() && !instance_id.empty()) out += " (instance " + instance_id + ")";
  return out;
}

Status FetchMonitorIdentity(MonitorClient* client, MonitorIdentity* identity) {
  HttpResult r;
  DEDUPV1_RETURN_IF_ERROR(client->Get("/identity", &r));
  const std::string what = "the server at " + client->base_url();
  if (r.status != 200) {
    return Status::Corruption(what + " is not a dedupv1 monitor that tells its instance (GET /identity answered " +
                              std::to_string(r.status) + ")");
  }
  auto doc = nlohmann::json::parse(r.body, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("data_dir") || !doc["data_dir"].is_string() ||
      !doc.contains("instance_id") || !doc["instance_id"].is_string() || !doc.contains("pid") ||
      !doc["pid"].is_number_integer()) {
    return Status::Corruption(what + " answered GET /identity with something that is not a dedupv1 identity");
  }
  identity->data_dir = doc["data_dir"].get<std::string>();
  identity->instance_id = doc["instance_id"].get<std::string>();
  identity->pid = doc["pid"].get<long long>();
  return Status::OK();
}

Status ExpectInstanceOf(Env* env, const std::string& data_dir, ExpectedInstance* expected) {
  Id128 id{};
  Status s = ReadInstanceId(env, data_dir, &id);
  if (s.IsNotFound()) {
    return Status::NotFound("data dir " + data_dir + " has no instance id (" + s.message() +
                            "): the engine never opened it, so no monitor serves it");
  }
  DEDUPV1_RETURN_IF_ERROR(s);
  expected->data_dir = data_dir;
  expected->instance_id = Id128ToHex(id);
  return Status::OK();
}

Status CheckMonitorIdentity(const MonitorIdentity& got, const ExpectedInstance& expected,
                            const std::string& where) {
  // The instance id is read from the directory itself, so it decides when
  // known; paths may differ for one directory (symlinks, bind mounts).
  if (!expected.instance_id.empty() ? got.instance_id == expected.instance_id
                                    : SamePath(got.data_dir, expected.data_dir)) {
    return Status::OK();
  }
  return Status::Aborted("the monitor at " + where + " belongs to " + got.Describe() + ", not to " +
                         expected.Describe());
}

}  // namespace dedupv1
