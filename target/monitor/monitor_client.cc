#include "target/monitor/monitor_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <mutex>

namespace dedupv1 {

namespace {

// curl_global_init is not thread-safe; run it once, before the first handle.
void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t AppendBody(char* data, size_t size, size_t n, void* out) {
  static_cast<std::string*>(out)->append(data, size * n);
  return size * n;
}

// Picks Content-Type and Allow out of the response headers.
size_t ReadHeader(char* data, size_t size, size_t n, void* out) {
  auto* result = static_cast<HttpResult*>(out);
  std::string line(data, size * n);
  const size_t colon = line.find(':');
  if (colon != std::string::npos) {
    std::string name = line.substr(0, colon);
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    std::string value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
    while (!value.empty() && (value.back() == '\r' || value.back() == '\n')) value.pop_back();
    if (name == "content-type") result->content_type = value;
    if (name == "allow") result->allow = value;
  }
  return size * n;
}

}  // namespace

MonitorClient::MonitorClient(std::string host, uint16_t port, std::string token, long timeout_ms)
    : host_(std::move(host)), port_(port), token_(std::move(token)), timeout_ms_(timeout_ms) {
  InitCurlOnce();
  curl_ = curl_easy_init();
}

MonitorClient::~MonitorClient() {
  if (curl_ != nullptr) curl_easy_cleanup(curl_);
}

std::string MonitorClient::base_url() const {
  const bool v6 = host_.find(':') != std::string::npos;
  return "http://" + (v6 ? "[" + host_ + "]" : host_) + ":" + std::to_string(port_);
}

Status MonitorClient::Request(const std::string& method, const std::string& path,
                              const std::map<std::string, std::string>& params,
                              HttpResult* result) {
  if (curl_ == nullptr) return Status::IOError("libcurl could not create a handle");
  *result = HttpResult();
  std::string url = base_url() + (path.empty() || path[0] != '/' ? "/" : "") + path;
  char sep = '?';
  for (const auto& [key, value] : params) {
    char* k = curl_easy_escape(curl_, key.data(), static_cast<int>(key.size()));
    char* v = curl_easy_escape(curl_, value.data(), static_cast<int>(value.size()));
    url += sep;
    url += k != nullptr ? k : "";
    url += '=';
    url += v != nullptr ? v : "";
    curl_free(k);
    curl_free(v);
    sep = '&';
  }

  curl_easy_reset(curl_);
  curl_easy_setopt(curl_, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, timeout_ms_);
  curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, std::min(timeout_ms_, 10000L));
  curl_easy_setopt(curl_, CURLOPT_NOPROXY, "*");  // the monitor is never behind a proxy
  curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &AppendBody);
  curl_easy_setopt(curl_, CURLOPT_WRITEDATA, &result->body);
  curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &ReadHeader);
  curl_easy_setopt(curl_, CURLOPT_HEADERDATA, result);
  if (method == "GET") {
    curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
  } else if (method == "HEAD") {
    curl_easy_setopt(curl_, CURLOPT_NOBODY, 1L);
  } else if (method == "POST") {
    curl_easy_setopt(curl_, CURLOPT_POST, 1L);
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, "");
    curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE, 0L);
  } else {
    curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, method.c_str());
  }
  curl_slist* headers = nullptr;
  if (!token_.empty()) {
    headers = curl_slist_append(headers, ("Authorization: Bearer " + token_).c_str());
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers);
  }
  const CURLcode rc = curl_easy_perform(curl_);
  curl_slist_free_all(headers);
  if (rc != CURLE_OK) {
    return Status::IOError("cannot talk to the monitor at " + base_url() + ": " +
                           curl_easy_strerror(rc));
  }
  curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &result->status);
  return Status::OK();
}

}  // namespace dedupv1
