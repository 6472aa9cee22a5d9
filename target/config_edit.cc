// Admin edits of a config file (see config_edit.h).
#include "target/config_edit.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <functional>
#include <sstream>
#include <vector>

#include "core/base/config.h"
#include "core/base/config_keys.h"

namespace dedupv1 {
namespace {

std::vector<std::string> Lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  return lines;
}

std::string Join(const std::vector<std::string>& lines) {
  std::string out;
  for (const auto& l : lines) out += l + "\n";
  return out;
}

std::string TrimBlanks(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r") - b + 1);
}

// The volume name of a "volume = NAME SIZE" line (comment after '#'
// ignored, as the parser does), or "" for any other line.
std::string VolumeOfLine(const std::string& line) {
  const std::string code = line.substr(0, line.find('#'));
  const size_t eq = code.find('=');
  if (eq == std::string::npos || TrimBlanks(code.substr(0, eq)) != "volume") return "";
  const std::vector<std::string> words = SplitConfigList(code.substr(eq + 1));  // as the parser splits
  return words.empty() ? "" : words[0];
}

}  // namespace

std::string AddVolumeLine(const std::string& text, const std::string& name, const std::string& size,
                          const std::string& policy) {
  std::vector<std::string> lines = Lines(text);
  size_t at = lines.size();
  for (size_t i = 0; i < lines.size(); i++) {
    if (!VolumeOfLine(lines[i]).empty()) at = i + 1;
  }
  lines.insert(lines.begin() + static_cast<long>(at),
               "volume = " + name + " " + size + (policy.empty() ? "" : " policy=" + policy));
  return Join(lines);
}

namespace {

// Rewrites volume NAME's line of |text| into |*out|: |edit| gets the line's
// words (name, size, then the rest, as the parser splits them at blanks and
// commas) and changes them; the line's comment stays. NotFound when no
// volume line names it.
Status EditVolumeLine(const std::string& text, const std::string& name,
                      const std::function<void(std::vector<std::string>*)>& edit, std::string* out) {
  std::vector<std::string> lines = Lines(text);
  for (auto& line : lines) {
    if (VolumeOfLine(line) != name) continue;
    const size_t hash = line.find('#');
    const std::string comment = hash == std::string::npos ? "" : "  " + line.substr(hash);
    std::vector<std::string> words = SplitConfigList(line.substr(0, hash).substr(line.find('=') + 1));
    edit(&words);
    std::string joined;
    for (const auto& w : words) joined += (joined.empty() ? "" : " ") + w;
    line = "volume = " + joined + comment;
    *out = Join(lines);
    return Status::OK();
  }
  return Status::NotFound("no line 'volume = " + name + " ...'");
}

}  // namespace

Status SetVolumeSize(const std::string& text, const std::string& name, const std::string& size, std::string* out) {
  return EditVolumeLine(
      text, name,
      [&](std::vector<std::string>* words) {
        if (words->size() < 2) words->resize(2);
        (*words)[1] = size;
      },
      out);
}

Status SetVolumePolicy(const std::string& text, const std::string& name, const std::string& policy,
                       std::string* out) {
  return EditVolumeLine(
      text, name,
      [&](std::vector<std::string>* words) {
        std::vector<std::string> kept;
        for (size_t i = 0; i < words->size(); i++) {
          if (i < 2 || (*words)[i].rfind("policy=", 0) != 0) kept.push_back((*words)[i]);
        }
        if (policy != "inline") kept.push_back("policy=" + policy);
        *words = std::move(kept);
      },
      out);
}

Status RemoveVolumeLine(const std::string& text, const std::string& name, std::string* out) {
  std::vector<std::string> lines = Lines(text);
  for (size_t i = 0; i < lines.size(); i++) {
    if (VolumeOfLine(lines[i]) != name) continue;
    lines.erase(lines.begin() + static_cast<long>(i));
    *out = Join(lines);
    return Status::OK();
  }
  return Status::NotFound("no line 'volume = " + name + " ...'");
}

Status ReplaceConfigFile(Env* env, const std::string& link, const std::string& text) {
  // A symlinked config (targets.conf's lunN.conf) stays a link: its target is replaced.
  char resolved[PATH_MAX];
  if (::realpath(link.c_str(), resolved) == nullptr) return Status::IOError(link + ": " + std::strerror(errno));
  const std::string path = resolved;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) return Status::IOError(path + ": " + std::strerror(errno));
  const std::string next = path + ".dedupv1d-new";
  // Written readable by its owner only, then given the old file's bits and
  // owner, then renamed over it.
  const mode_t old_umask = ::umask(077);
  Status s = WriteFileAtomically(env, next, text);
  ::umask(old_umask);
  if (s.ok() && (::chown(next.c_str(), st.st_uid, st.st_gid) != 0 || ::chmod(next.c_str(), st.st_mode & 07777) != 0)) {
    s = Status::IOError(next + ": cannot give it the owner and mode of " + path + ": " + std::strerror(errno));
  }
  if (s.ok()) s = env->RenameFile(next, path);
  if (s.ok()) s = env->SyncDir(DirName(path));
  if (!s.ok()) env->DeleteFile(next);
  return s;
}

}  // namespace dedupv1
