// Drives one dedupv1 LUN over iSCSI (libiscsi) and checks what the module
// promises per command: data read back as written (also when many blocks carry
// the same content), UNMAP / WRITE SAME with UNMAP deallocate (zeros, GET LBA
// STATUS "deallocated"), COMPARE AND WRITE writes only on a match and reports
// a miscompare, ORWRITE, VERIFY, WRITE AND VERIFY, SYNCHRONIZE CACHE, the
// Block Limits VPD's UNMAP descriptor count is usable (finite) and UNMAP with
// that many 0-block descriptors succeeds, and ranges beyond the end are
// refused. The LUN's content is overwritten.
//
//   scsi_semantics_test iscsi://127.0.0.1:PORT/IQN/LUN
//
// Prints "ok"/"FAIL" per check and "N passed, N failed"; exits 1 on a failure.
#include <iscsi/iscsi.h>
#include <iscsi/scsi-lowlevel.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

namespace dedupv1 {
namespace {

constexpr int kGood = SCSI_STATUS_GOOD;
constexpr int kCheckCondition = SCSI_STATUS_CHECK_CONDITION;

struct TaskDeleter {
  void operator()(scsi_task* task) const {
    if (task != nullptr) scsi_free_scsi_task(task);
  }
};
using Task = std::unique_ptr<scsi_task, TaskDeleter>;
using Bytes = std::vector<unsigned char>;

// One logged-in session to the LUN, and the counts of the checks made on it.
class Lun {
 public:
  ~Lun() {
    if (iscsi_ != nullptr) {
      iscsi_logout_sync(iscsi_);
      iscsi_destroy_context(iscsi_);
    }
  }

  bool Connect(const char* url_text) {
    iscsi_ = iscsi_create_context("iqn.2026-11.dedupv1:scsi-semantics-test");
    if (iscsi_ == nullptr) return false;
    iscsi_url* url = iscsi_parse_full_url(iscsi_, url_text);
    if (url == nullptr) {
      std::fprintf(stderr, "bad url %s: %s\n", url_text, iscsi_get_error(iscsi_));
      return false;
    }
    iscsi_set_targetname(iscsi_, url->target);
    iscsi_set_session_type(iscsi_, ISCSI_SESSION_NORMAL);
    iscsi_set_header_digest(iscsi_, ISCSI_HEADER_DIGEST_NONE_CRC32C);
    lun_ = url->lun;
    bool ok = iscsi_full_connect_sync(iscsi_, url->portal, url->lun) == 0;
    if (!ok) std::fprintf(stderr, "login to %s failed: %s\n", url_text, iscsi_get_error(iscsi_));
    iscsi_destroy_url(url);
    return ok;
  }

  iscsi_context* ctx() const { return iscsi_; }
  int lun() const { return lun_; }
  uint32_t block_size = 512;
  uint64_t blocks = 0;

  // Records whether |task| ended with |status| (and, for CHECK CONDITION, the
  // sense key and ASC/ASCQ when given).
  bool Expect(const std::string& what, const Task& task, int status, int key = -1,
              int ascq = -1) {
    bool ok = task != nullptr && task->status == status &&
              (status != kCheckCondition || key < 0 ||
               (static_cast<int>(task->sense.key) == key &&
                (ascq < 0 || static_cast<int>(task->sense.ascq) == ascq)));
    if (!ok) {
      if (task == nullptr) {
        std::printf("FAIL %s: no response (%s)\n", what.c_str(), iscsi_get_error(iscsi_));
      } else {
        std::printf("FAIL %s: status %d sense key 0x%x asc/ascq 0x%04x\n", what.c_str(),
                    task->status, task->sense.key, task->sense.ascq);
      }
    }
    return Count(what, ok, /*quiet_fail=*/true);
  }

  bool Check(const std::string& what, bool ok) { return Count(what, ok, false); }

  Task Read(uint64_t lba, uint32_t n) {
    return Task(iscsi_read16_sync(iscsi_, lun_, lba, n * block_size, block_size, 0, 0, 0, 0, 0));
  }
  Task Write(uint64_t lba, Bytes& data, int fua = 0) {
    return Task(iscsi_write16_sync(iscsi_, lun_, lba, data.data(), data.size(), block_size, 0,
                                   0, fua, 0, 0));
  }
  // Reads |n| blocks at |lba| and compares them with |expected|.
  bool ReadEquals(const std::string& what, uint64_t lba, const Bytes& expected) {
    Task task = Read(lba, expected.size() / block_size);
    if (!Expect(what + " (read)", task, kGood)) return false;
    return Check(what, task->datain.size == static_cast<int>(expected.size()) &&
                           std::memcmp(task->datain.data, expected.data(), expected.size()) == 0);
  }

  int passed = 0;
  int failed = 0;

 private:
  bool Count(const std::string& what, bool ok, bool quiet_fail) {
    if (ok) {
      ++passed;
      std::printf("ok   %s\n", what.c_str());
    } else {
      ++failed;
      if (!quiet_fail) std::printf("FAIL %s\n", what.c_str());
    }
    return ok;
  }

  iscsi_context* iscsi_ = nullptr;
  int lun_ = 0;
};

Bytes RandomBytes(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  Bytes out(n);
  for (auto& b : out) b = static_cast<unsigned char>(gen());
  return out;
}

// First LBA status descriptor for |lba|: {lba, blocks, provisioning}.
struct LbaStatus {
  uint64_t lba = 0;
  uint32_t blocks = 0;
  int provisioning = -1;
};

bool GetLbaStatus(Lun& lun, const std::string& what, uint64_t lba, LbaStatus* status) {
  Task task(iscsi_get_lba_status_sync(lun.ctx(), lun.lun(), lba, 24));
  if (!lun.Expect(what + " (GET LBA STATUS)", task, kGood)) return false;
  auto* data = static_cast<scsi_get_lba_status*>(scsi_datain_unmarshall(task.get()));
  if (data == nullptr || data->num_descriptors < 1) return lun.Check(what + " (descriptor)", false);
  status->lba = data->descriptors[0].lba;
  status->blocks = data->descriptors[0].num_blocks;
  status->provisioning = data->descriptors[0].provisioning;
  return true;
}

void Run(Lun& lun) {
  Task cap(iscsi_readcapacity16_sync(lun.ctx(), lun.lun()));
  if (!lun.Expect("READ CAPACITY (16)", cap, kGood)) return;
  auto* rc16 = static_cast<scsi_readcapacity16*>(scsi_datain_unmarshall(cap.get()));
  if (!lun.Check("READ CAPACITY (16) parsed", rc16 != nullptr)) return;
  lun.block_size = rc16->block_length;
  lun.blocks = rc16->returned_lba + 1;
  lun.Check("thin provisioned (LBPME)", rc16->lbpme == 1);
  lun.Check("unmapped blocks read zero (LBPRZ)", rc16->lbprz == 1);
  const uint32_t bs = lun.block_size;
  // Regions (in blocks) of the 8 MiB the checks need; 4 MiB aligned for UNMAP
  // so a coarse engine block granularity still deallocates whole blocks.
  const uint64_t unmap_lba = (4u << 20) / bs, unmap_blocks = (4u << 20) / bs;
  if (!lun.Check("LUN of at least 8 MiB", lun.blocks * bs >= (8u << 20))) return;

  Bytes data = RandomBytes(64 * bs, 1);
  lun.Expect("WRITE (16) 64 blocks", lun.Write(0, data), kGood);
  lun.ReadEquals("READ (16) returns the written blocks", 0, data);

  // The same 4 KiB content at 32 places: deduplicated, still read back.
  Bytes block4k = RandomBytes(4096, 2);
  Bytes many;
  for (int i = 0; i < 32; ++i) many.insert(many.end(), block4k.begin(), block4k.end());
  lun.Expect("WRITE (16) duplicate content", lun.Write(1024, many), kGood);
  lun.ReadEquals("duplicate content reads back", 1024, many);

  Bytes fua_data = RandomBytes(8 * bs, 3);
  lun.Expect("WRITE (16) with FUA", lun.Write(64, fua_data, 1), kGood);
  lun.ReadEquals("FUA write reads back", 64, fua_data);
  lun.Expect("SYNCHRONIZE CACHE (16)",
             Task(iscsi_synchronizecache16_sync(lun.ctx(), lun.lun(), 0, 0, 0, 0)), kGood);

  // UNMAP: zeros and "deallocated" afterwards.
  Bytes region = RandomBytes(unmap_blocks * bs, 4);
  lun.Expect("WRITE (16) the unmap region", lun.Write(unmap_lba, region), kGood);
  LbaStatus st;
  if (GetLbaStatus(lun, "written region", unmap_lba, &st))
    lun.Check("written region is mapped", st.lba == unmap_lba && st.provisioning == 0);
  unmap_list range{unmap_lba, static_cast<uint32_t>(unmap_blocks)};
  lun.Expect("UNMAP", Task(iscsi_unmap_sync(lun.ctx(), lun.lun(), 0, 0, &range, 1)), kGood);
  lun.ReadEquals("unmapped region reads zeros", unmap_lba, Bytes(unmap_blocks * bs, 0));
  if (GetLbaStatus(lun, "unmapped region", unmap_lba, &st))
    lun.Check("unmapped region is deallocated",
              st.lba == unmap_lba && st.provisioning == 1 && st.blocks >= unmap_blocks);
  if (GetLbaStatus(lun, "block 0", 0, &st))
    lun.Check("block 0 still mapped", st.lba == 0 && st.provisioning == 0);
  lun.ReadEquals("data outside the unmapped region kept", 0, data);
  unmap_list beyond{lun.blocks - 1, 2};
  lun.Expect("UNMAP beyond the end refused",
             Task(iscsi_unmap_sync(lun.ctx(), lun.lun(), 0, 0, &beyond, 1)), kCheckCondition,
             SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE);

  // Block Limits VPD: a finite MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT (FFFFFFFFh,
  // "no limit", reads as -1 to initiators that keep it in an int), and UNMAP
  // with that many descriptors of 0 blocks is a no-op that succeeds.
  Task limits(iscsi_inquiry_sync(lun.ctx(), lun.lun(), 1, SCSI_INQUIRY_PAGECODE_BLOCK_LIMITS, 255));
  if (lun.Expect("INQUIRY Block Limits VPD", limits, kGood)) {
    auto* bl = static_cast<scsi_inquiry_block_limits*>(scsi_datain_unmarshall(limits.get()));
    // (65535 - 8) / 16: what UNMAP's 16-bit PARAMETER LIST LENGTH can carry.
    constexpr uint32_t kMaxDescriptors = 4095;
    if (lun.Check("Block Limits VPD parsed", bl != nullptr) &&
        lun.Check("MAXIMUM UNMAP BLOCK DESCRIPTOR COUNT is finite (2..4095)",
                  bl->max_unmap_bdc >= 2 && bl->max_unmap_bdc <= kMaxDescriptors)) {
      std::vector<unmap_list> empty(bl->max_unmap_bdc);
      for (size_t i = 0; i < empty.size(); ++i) empty[i] = unmap_list{i / 2, 0};
      lun.Expect("UNMAP with the maximum number of 0-block descriptors",
                 Task(iscsi_unmap_sync(lun.ctx(), lun.lun(), 0, 0, empty.data(),
                                       static_cast<int>(empty.size()))),
                 kGood);
      lun.ReadEquals("0-block descriptors unmap nothing", 0, data);
    }
  }

  // WRITE SAME: the pattern everywhere, then deallocated with UNMAP set.
  Bytes pattern = RandomBytes(bs, 5);
  lun.Expect("WRITE SAME (16) 256 blocks",
             Task(iscsi_writesame16_sync(lun.ctx(), lun.lun(), 2048, pattern.data(), bs, 256, 0, 0,
                                         0, 0)),
             kGood);
  Bytes repeated;
  for (int i = 0; i < 256; ++i) repeated.insert(repeated.end(), pattern.begin(), pattern.end());
  lun.ReadEquals("WRITE SAME pattern reads back", 2048, repeated);
  lun.Expect("WRITE SAME (16) with UNMAP",
             Task(iscsi_writesame16_sync(lun.ctx(), lun.lun(), 2048, pattern.data(), bs, 256, 0, 1,
                                         0, 0)),
             kGood);
  lun.ReadEquals("WRITE SAME with UNMAP reads zeros", 2048, Bytes(256 * bs, 0));

  // COMPARE AND WRITE.
  Bytes a(bs, 'A'), b(bs, 'B'), c(bs, 'C');
  lun.Expect("WRITE (16) one block of A", lun.Write(10, a), kGood);
  Bytes a_then_b = a;
  a_then_b.insert(a_then_b.end(), b.begin(), b.end());
  lun.Expect("COMPARE AND WRITE on a match",
             Task(iscsi_compareandwrite_sync(lun.ctx(), lun.lun(), 10, a_then_b.data(),
                                             a_then_b.size(), bs, 0, 0, 0, 0, 0)),
             kGood);
  lun.ReadEquals("COMPARE AND WRITE wrote", 10, b);
  Bytes a_then_c = a;
  a_then_c.insert(a_then_c.end(), c.begin(), c.end());
  lun.Expect("COMPARE AND WRITE on a mismatch",
             Task(iscsi_compareandwrite_sync(lun.ctx(), lun.lun(), 10, a_then_c.data(),
                                             a_then_c.size(), bs, 0, 0, 0, 0, 0)),
             kCheckCondition, SCSI_SENSE_MISCOMPARE,
             SCSI_SENSE_ASCQ_MISCOMPARE_DURING_VERIFY);
  lun.ReadEquals("mismatched COMPARE AND WRITE did not write", 10, b);

  // ORWRITE, VERIFY, WRITE AND VERIFY.
  Bytes low(bs, 0x0f), high(bs, 0xf0);
  lun.Expect("WRITE (16) 0x0f", lun.Write(20, low), kGood);
  lun.Expect("ORWRITE 0xf0",
             Task(iscsi_orwrite_sync(lun.ctx(), lun.lun(), 20, high.data(), bs, bs, 0, 0, 0, 0, 0)),
             kGood);
  lun.ReadEquals("ORWRITE result", 20, Bytes(bs, 0xff));
  Bytes ones(bs, 0xff), other(bs, 0x11);
  lun.Expect("VERIFY (16) equal data",
             Task(iscsi_verify16_sync(lun.ctx(), lun.lun(), ones.data(), bs, 20, 0, 0, 1, bs)),
             kGood);
  lun.Expect("VERIFY (16) different data",
             Task(iscsi_verify16_sync(lun.ctx(), lun.lun(), other.data(), bs, 20, 0, 0, 1, bs)),
             kCheckCondition, SCSI_SENSE_MISCOMPARE);
  Bytes wv = RandomBytes(4 * bs, 6);
  lun.Expect("WRITE AND VERIFY (16)",
             Task(iscsi_writeverify16_sync(lun.ctx(), lun.lun(), 30, wv.data(), wv.size(), bs, 0,
                                           0, 1, 0)),
             kGood);
  lun.ReadEquals("WRITE AND VERIFY wrote", 30, wv);

  // Beyond the end.
  lun.Expect("READ (16) beyond the end refused", lun.Read(lun.blocks - 1, 2), kCheckCondition,
             SCSI_SENSE_ILLEGAL_REQUEST, SCSI_SENSE_ASCQ_LBA_OUT_OF_RANGE);
  Bytes last = RandomBytes(bs, 7);
  lun.Expect("WRITE (16) the last block", lun.Write(lun.blocks - 1, last), kGood);
  lun.ReadEquals("last block reads back", lun.blocks - 1, last);
}

}  // namespace
}  // namespace dedupv1

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s iscsi://HOST:PORT/IQN/LUN\n", argv[0]);
    return 2;
  }
  dedupv1::Lun lun;
  if (!lun.Connect(argv[1])) {
    std::printf("0 passed, 1 failed\n");
    return 1;
  }
  dedupv1::Run(lun);
  std::printf("%d passed, %d failed\n", lun.passed, lun.failed);
  return lun.failed == 0 ? 0 : 1;
}
