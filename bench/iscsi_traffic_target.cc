#include "bench/iscsi_traffic_target.h"

#ifdef DEDUPV1_HAVE_LIBISCSI
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <vector>
#endif

namespace dedupv1 {
namespace bench {

#ifndef DEDUPV1_HAVE_LIBISCSI

bool HaveIscsi() { return false; }

Status OpenIscsiTarget(const std::string& url, const TargetOptions& options,
                       std::unique_ptr<TrafficTarget>* target) {
  return Status::NotSupported("this dedupv1_traffic was built without libiscsi; install libiscsi-dev and rebuild");
}

#else

bool HaveIscsi() { return true; }

namespace {

constexpr int kUnitAttentionRetries = 3;

std::string SenseText(const scsi_task* task) {
  char buf[200];
  std::snprintf(buf, sizeof(buf), "CHECK CONDITION, %s / %s (sense key 0x%x, asc/ascq 0x%04x)",
                scsi_sense_key_str(task->sense.key), scsi_sense_ascq_str(task->sense.ascq),
                static_cast<unsigned>(task->sense.key), static_cast<unsigned>(task->sense.ascq));
  return buf;
}

std::string StatusText(iscsi_context* ctx, int status, const scsi_task* task) {
  switch (status) {
    case SCSI_STATUS_CHECK_CONDITION:
      return task != nullptr ? SenseText(task) : "CHECK CONDITION";
    case SCSI_STATUS_TIMEOUT:
      return "timed out";
    case SCSI_STATUS_CANCELLED:
      return "cancelled (session lost?)";
    case SCSI_STATUS_ERROR:
      return std::string("transport error: ") + iscsi_get_error(ctx);
    default: {
      char buf[64];
      std::snprintf(buf, sizeof(buf), "SCSI status 0x%x", static_cast<unsigned>(status));
      return buf;
    }
  }
}

// One logged-in iSCSI session to the LUN of a URL.
class Session {
 public:
  Session() = default;
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;
  ~Session() { Close(); }

  Status Connect(const std::string& url_text, const std::string& initiator, int timeout_seconds) {
    ctx_ = iscsi_create_context(initiator.c_str());
    if (ctx_ == nullptr) return Status::IOError("cannot create an iSCSI context");
    iscsi_url* url = iscsi_parse_full_url(ctx_, url_text.c_str());
    if (url == nullptr) {
      return Status::InvalidArgument("bad iSCSI URL '" + url_text + "' (want iscsi://HOST[:PORT]/IQN/LUN): " +
                                     iscsi_get_error(ctx_));
    }
    iscsi_set_targetname(ctx_, url->target);
    iscsi_set_session_type(ctx_, ISCSI_SESSION_NORMAL);
    iscsi_set_header_digest(ctx_, ISCSI_HEADER_DIGEST_NONE);
    iscsi_set_noautoreconnect(ctx_, 1);
    iscsi_set_timeout(ctx_, timeout_seconds);
    lun_ = url->lun;
    int r = iscsi_full_connect_sync(ctx_, url->portal, url->lun);
    iscsi_destroy_url(url);
    if (r != 0) return Status::IOError("login to " + url_text + " failed: " + iscsi_get_error(ctx_));
    logged_in_ = true;
    return Status::OK();
  }

  // Logs out when the session is still sound, then frees the context
  // (libiscsi cancels whatever is still in flight).
  void Close() {
    if (ctx_ == nullptr) return;
    if (logged_in_ && sound_) iscsi_logout_sync(ctx_);
    iscsi_destroy_context(ctx_);
    ctx_ = nullptr;
  }

  void MarkUnsound() { sound_ = false; }
  iscsi_context* ctx() const { return ctx_; }
  int lun() const { return lun_; }

 private:
  iscsi_context* ctx_ = nullptr;
  int lun_ = 0;
  bool logged_in_ = false;
  bool sound_ = true;
};

class IscsiStream : public TrafficStream {
 public:
  IscsiStream(int depth, uint32_t block_size) : depth_(depth), block_size_(block_size) {}
  ~IscsiStream() override {
    closing_ = true;
    if (!error_.ok() || inflight_ > 0) session_.MarkUnsound();
    session_.Close();  // cancelled requests come back through Callback and are freed there
  }

  Status Connect(const std::string& url, const std::string& initiator, int timeout_seconds) {
    return session_.Connect(url, initiator, timeout_seconds);
  }

  int depth() const override { return depth_; }

  Status StartWrite(uint64_t offset, const uint8_t* data, size_t len, void* tag) override {
    return Submit(new Request{this, tag, offset, len, true, const_cast<uint8_t*>(data), {}, 0});
  }
  Status StartRead(uint64_t offset, uint8_t* data, size_t len, void* tag) override {
    return Submit(new Request{this, tag, offset, len, false, data, {}, 0});
  }

  Status Reap(std::vector<void*>* done) override {
    if (done_.empty() && inflight_ == 0 && error_.ok()) {
      return Status::InvalidArgument("Reap without a started request");
    }
    iscsi_context* ctx = session_.ctx();
    while (done_.empty() && error_.ok()) {
      pollfd pfd{};
      pfd.fd = iscsi_get_fd(ctx);
      pfd.events = static_cast<short>(iscsi_which_events(ctx));
      if (pfd.events == 0) {  // libiscsi asks to wait (reconnect back-off)
        ::usleep(100 * 1000);
        if (iscsi_service(ctx, 0) < 0) Fail(Status::IOError(std::string("iSCSI: ") + iscsi_get_error(ctx)));
        continue;
      }
      int r = ::poll(&pfd, 1, 1000);
      if (r < 0) {
        if (errno == EINTR) continue;
        Fail(Status::FromErrno(errno, "poll on the iSCSI socket"));
        break;
      }
      // revents 0 once a second lets libiscsi time out stuck commands.
      if (iscsi_service(ctx, r == 0 ? 0 : pfd.revents) < 0) {
        Fail(Status::IOError(std::string("iSCSI session failed: ") + iscsi_get_error(ctx)));
      }
    }
    if (!error_.ok()) return error_;
    done->insert(done->end(), done_.begin(), done_.end());
    done_.clear();
    return Status::OK();
  }

 private:
  struct Request {
    IscsiStream* stream;
    void* tag;
    uint64_t offset;
    size_t len;
    bool write;
    uint8_t* data;
    scsi_iovec iov;  // read target; must live until the command completes
    int retries;
  };

  const char* Name(const Request* req) const { return req->write ? "WRITE(16)" : "READ(16)"; }

  std::string Where(const Request* req) const {
    return std::string(Name(req)) + " of " + std::to_string(req->len) + " bytes at LBA " +
           std::to_string(req->offset / block_size_) + " (byte " + std::to_string(req->offset) + ")";
  }

  Status Submit(Request* req) {
    if (req->offset % block_size_ != 0 || req->len % block_size_ != 0 || req->len == 0) {
      Status s = Status::InvalidArgument(Where(req) + " is not a whole number of " +
                                         std::to_string(block_size_) + "-byte blocks");
      delete req;
      return s;
    }
    iscsi_context* ctx = session_.ctx();
    const uint64_t lba = req->offset / block_size_;
    const uint32_t len = static_cast<uint32_t>(req->len);
    scsi_task* task;
    if (req->write) {
      task = iscsi_write16_task(ctx, session_.lun(), lba, req->data, len, static_cast<int>(block_size_), 0, 0, 0,
                                0, 0, &IscsiStream::Callback, req);
    } else {
      req->iov.iov_base = req->data;
      req->iov.iov_len = req->len;
      task = iscsi_read16_iov_task(ctx, session_.lun(), lba, len, static_cast<int>(block_size_), 0, 0, 0, 0, 0,
                                   &IscsiStream::Callback, req, &req->iov, 1);
    }
    if (task == nullptr) {
      Status s = Status::IOError("cannot queue " + Where(req) + ": " + iscsi_get_error(ctx));
      delete req;
      return s;
    }
    inflight_++;
    return Status::OK();
  }

  void Fail(Status s) {
    if (error_.ok()) error_ = std::move(s);
  }

  static void Callback(iscsi_context* ctx, int status, void* command_data, void* private_data) {
    auto* req = static_cast<Request*>(private_data);
    auto* task = static_cast<scsi_task*>(command_data);
    IscsiStream* self = req->stream;
    self->inflight_--;
    if (status == SCSI_STATUS_GOOD) {
      if (!req->write && task != nullptr && task->residual_status == SCSI_RESIDUAL_UNDERFLOW &&
          task->residual > 0) {
        self->Fail(Status::IOError(self->Where(req) + ": the target returned " +
                                   std::to_string(task->residual) + " bytes too few"));
      } else {
        self->done_.push_back(req->tag);
      }
      if (task != nullptr) scsi_free_scsi_task(task);
      delete req;
      return;
    }
    if (status == SCSI_STATUS_CHECK_CONDITION && task != nullptr &&
        task->sense.key == SCSI_SENSE_UNIT_ATTENTION && req->retries < kUnitAttentionRetries &&
        !self->closing_) {
      scsi_free_scsi_task(task);
      req->retries++;
      Status s = self->Submit(req);  // frees req on failure
      if (!s.ok()) self->Fail(s);
      return;
    }
    if (!self->closing_) {
      self->Fail(Status::IOError(self->Where(req) + " failed: " + StatusText(ctx, status, task)));
    }
    if (task != nullptr) scsi_free_scsi_task(task);
    delete req;
  }

  const int depth_;
  const uint32_t block_size_;
  Session session_;
  int inflight_ = 0;
  bool closing_ = false;
  std::vector<void*> done_;
  Status error_;
};

class IscsiTarget : public TrafficTarget {
 public:
  IscsiTarget(std::string url, const TargetOptions& options)
      : url_(std::move(url)),
        options_(options),
        initiator_("iqn.2026-11.dedupv1:traffic-" + std::to_string(::getpid())) {}

  Status Open() {
    Status s = control_.Connect(url_, initiator_ + "-ctl", options_.timeout_seconds);
    if (!s.ok()) return s;
    return ReadCapacity();
  }

  uint64_t capacity() const override { return capacity_; }
  uint32_t block_size() const override { return block_size_; }

  Status OpenStream(int index, std::unique_ptr<TrafficStream>* stream) override {
    auto st = std::make_unique<IscsiStream>(std::max(1, options_.queue_depth), block_size_);
    Status s = st->Connect(url_, initiator_ + "-s" + std::to_string(index), options_.timeout_seconds);
    if (!s.ok()) return s;
    *stream = std::move(st);
    return Status::OK();
  }

  // SYNCHRONIZE CACHE(10) over the whole LUN (LBA 0, 0 blocks = to the end),
  // not IMMED: it returns when the target has made the data durable.
  Status Sync() override {
    for (int attempt = 0;; attempt++) {
      scsi_task* task = iscsi_synchronizecache10_sync(control_.ctx(), control_.lun(), 0, 0, 0, 0);
      if (task == nullptr) {
        control_.MarkUnsound();
        return Status::IOError("SYNCHRONIZE CACHE on " + url_ + " failed: " + iscsi_get_error(control_.ctx()));
      }
      int status = task->status;
      bool unit_attention = status == SCSI_STATUS_CHECK_CONDITION && task->sense.key == SCSI_SENSE_UNIT_ATTENTION;
      std::string text = StatusText(control_.ctx(), status, task);
      scsi_free_scsi_task(task);
      if (status == SCSI_STATUS_GOOD) return Status::OK();
      if (!unit_attention || attempt >= kUnitAttentionRetries) {
        return Status::IOError("SYNCHRONIZE CACHE on " + url_ + " failed: " + text);
      }
    }
  }

  const std::string& name() const override { return url_; }

 private:
  Status ReadCapacity() {
    for (int attempt = 0;; attempt++) {
      scsi_task* task = iscsi_readcapacity16_sync(control_.ctx(), control_.lun());
      if (task == nullptr) {
        return Status::IOError("READ CAPACITY(16) on " + url_ + " failed: " + iscsi_get_error(control_.ctx()));
      }
      if (task->status == SCSI_STATUS_GOOD) {
        auto* rc = static_cast<scsi_readcapacity16*>(scsi_datain_unmarshall(task));
        if (rc == nullptr || rc->block_length == 0) {
          scsi_free_scsi_task(task);
          return Status::IOError("READ CAPACITY(16) on " + url_ + ": cannot parse the answer");
        }
        block_size_ = rc->block_length;
        capacity_ = (rc->returned_lba + 1) * rc->block_length;
        scsi_free_scsi_task(task);
        return Status::OK();
      }
      bool unit_attention =
          task->status == SCSI_STATUS_CHECK_CONDITION && task->sense.key == SCSI_SENSE_UNIT_ATTENTION;
      std::string text = StatusText(control_.ctx(), task->status, task);
      scsi_free_scsi_task(task);
      if (!unit_attention || attempt >= kUnitAttentionRetries) {
        return Status::IOError("READ CAPACITY(16) on " + url_ + " failed: " + text);
      }
    }
  }

  const std::string url_;
  const TargetOptions options_;
  const std::string initiator_;
  Session control_;
  uint64_t capacity_ = 0;
  uint32_t block_size_ = 512;
};

}  // namespace

Status OpenIscsiTarget(const std::string& url, const TargetOptions& options,
                       std::unique_ptr<TrafficTarget>* target) {
  auto t = std::make_unique<IscsiTarget>(url, options);
  Status s = t->Open();
  if (!s.ok()) return s;
  *target = std::move(t);
  return Status::OK();
}

#endif  // DEDUPV1_HAVE_LIBISCSI

}  // namespace bench
}  // namespace dedupv1
