#include "index/disk_hash_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <set>

#include "core/base/coding.h"

namespace dedupv1 {
namespace {

// Header page (page 0): only the first kHeaderBytes are used.
constexpr char kHeaderMagic[8] = {'D', 'D', 'V', '1', 'C', 'H', 'I', 'X'};
// Version 2 added the entry's last_event_id (8 bytes).
constexpr uint32_t kFormatVersion = 2;
constexpr size_t kHeaderBytes = 64;
constexpr size_t kHeaderCrcOffset = 56;  // CRC32C over [0, 56)

// Bucket page header: crc(4) count(2) flags(1) reserved(1) page_no(8).
constexpr size_t kPageHeaderBytes = 16;
// A slot after its key: container (8), usage (4), flags (1), last event id (8).
constexpr size_t kSlotBytesAfterKey = 21;
constexpr uint8_t kPageOverflowed = 1;  // an insert passed this page because it was full

// Entry flags.
constexpr uint8_t kEntryCommitted = 1;

// Journal: magic(8) page_size(4) reserved(4) page_count(8), then per page
// page_no(8) + image, then CRC32C over everything before it.
constexpr char kJournalMagic[8] = {'D', 'D', 'V', '1', 'C', 'I', 'J', 'N'};
constexpr size_t kJournalHeaderBytes = 24;
// WriteJournal writes in pieces of about this size.
constexpr size_t kJournalBufferBytes = 1 << 20;

struct Header {
  uint32_t version = 0;
  uint32_t page_size = 0;
  uint32_t key_size = 0;
  uint32_t max_probe_pages = 0;
  uint64_t bucket_count = 0;
  uint64_t size_bytes = 0;
  uint64_t entry_count = 0;
};

Status ParseHeader(const std::string& file, const uint8_t* p, Header* h) {
  if (std::memcmp(p, kHeaderMagic, sizeof(kHeaderMagic)) != 0) {
    return Status::Corruption("chunk index file " + file +
                              ": bad magic in header page 0 (not a chunk index file?)");
  }
  if (DecodeFixed32(p + kHeaderCrcOffset) != Crc32c(p, kHeaderCrcOffset)) {
    return Status::Corruption("chunk index file " + file + ": header page 0 checksum mismatch");
  }
  h->version = DecodeFixed32(p + 8);
  h->page_size = DecodeFixed32(p + 12);
  h->key_size = DecodeFixed32(p + 16);
  h->max_probe_pages = DecodeFixed32(p + 20);
  h->bucket_count = DecodeFixed64(p + 24);
  h->size_bytes = DecodeFixed64(p + 32);
  h->entry_count = DecodeFixed64(p + 40);
  if (h->version != kFormatVersion) {
    return Status::Corruption("chunk index file " + file + " has format version " +
                              std::to_string(h->version) + ", this build reads version " +
                              std::to_string(kFormatVersion));
  }
  return Status::OK();
}

// Accessors of a bucket page image.
uint16_t PageCount(const std::string& page) {
  return DecodeFixed16(reinterpret_cast<const uint8_t*>(page.data()) + 4);
}
void SetPageCount(std::string* page, uint16_t n) {
  EncodeFixed16(reinterpret_cast<uint8_t*>(page->data()) + 4, n);
}
uint8_t PageFlags(const std::string& page) { return static_cast<uint8_t>(page[6]); }
void SetPageFlags(std::string* page, uint8_t flags) { (*page)[6] = static_cast<char>(flags); }

void FormatEmptyPage(uint64_t page_no, std::string* page) {
  std::fill(page->begin(), page->end(), '\0');
  EncodeFixed64(reinterpret_cast<uint8_t*>(page->data()) + 8, page_no);
}

void SealPage(std::string* page) {
  uint8_t* p = reinterpret_cast<uint8_t*>(page->data());
  EncodeFixed32(p, Crc32c(p + 4, page->size() - 4));
}

}  // namespace

size_t DiskHashTable::SlotsPerPage(size_t page_size, size_t key_size) {
  return (page_size - kPageHeaderBytes) / (key_size + kSlotBytesAfterKey);
}

DiskHashTable::DiskHashTable(const DiskHashTableOptions& options, Env* env)
    : options_(options), env_(env), table_id_(TablePageCache::NewTableId()), journal_path_(JournalPath(options.path)) {
  entry_size_ = options.key_size + kSlotBytesAfterKey;
  slots_per_page_ = SlotsPerPage(options.page_size, options.key_size);
  SetGeometry(options.size_bytes);
}

void DiskHashTable::SetGeometry(uint64_t size_bytes) {
  size_bytes_ = size_bytes;
  bucket_count_ = size_bytes / options_.page_size - 1;
  capacity_ = static_cast<uint64_t>(
      std::floor(static_cast<double>(bucket_count_ * slots_per_page_) * options_.max_fill));
  probe_pages_ = static_cast<int>(
      std::min<uint64_t>(static_cast<uint64_t>(options_.max_probe_pages), bucket_count_));
}

DiskHashTable::~DiskHashTable() {
  std::lock_guard<std::mutex> l(apply_mu_);
  // On failure the journal stays and Open redoes the batch.
  (void)FinishPendingLocked();
}

Status DiskHashTable::ValidateOptions(const DiskHashTableOptions& o) {
  if (o.path.empty()) return Status::InvalidArgument("chunk index: no file path given");
  if (o.page_size < 512 || o.page_size > 65536 || (o.page_size & (o.page_size - 1)) != 0) {
    return Status::InvalidArgument("chunk index page size " + std::to_string(o.page_size) +
                                   " is not a power of two between 512 and 65536");
  }
  if (o.key_size < 1 || o.key_size > Fingerprint::kMaxSize) {
    return Status::InvalidArgument("chunk index key size " + std::to_string(o.key_size) +
                                   " is not between 1 and 32");
  }
  if (o.size_bytes / o.page_size < 2) {
    return Status::InvalidArgument("chunk index size " + std::to_string(o.size_bytes) +
                                   " is less than two pages of " + std::to_string(o.page_size));
  }
  if (!(o.max_fill > 0.0 && o.max_fill <= 1.0)) {
    return Status::InvalidArgument("chunk index max fill " + std::to_string(o.max_fill) +
                                   " is not in (0, 1]");
  }
  if (o.max_probe_pages < 1) {
    return Status::InvalidArgument("chunk index max probe pages must be at least 1");
  }
  return Status::OK();
}

Status DiskHashTable::Open(const DiskHashTableOptions& options, Env* env,
                           std::unique_ptr<DiskHashTable>* out) {
  DEDUPV1_RETURN_IF_ERROR(ValidateOptions(options));
  std::unique_ptr<DiskHashTable> t(new DiskHashTable(options, env));
  if (!env->FileExists(options.path)) {
    // A journal without its table belongs to an earlier incarnation; redoing
    // it into a fresh table would plant stale entries.
    if (env->FileExists(t->journal_path_)) {
      DEDUPV1_RETURN_IF_ERROR(env->DeleteFile(t->journal_path_));
    }
    DEDUPV1_RETURN_IF_ERROR(t->Create());
  }
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(options.path, OpenMode::kReadWrite, &t->table_));
  DEDUPV1_RETURN_IF_ERROR(env->OpenFile(t->journal_path_, OpenMode::kCreate, &t->journal_));
  DEDUPV1_RETURN_IF_ERROR(t->Recover());
  *out = std::move(t);
  return Status::OK();
}

std::string DiskHashTable::EncodeHeader(uint64_t entry_count) const {
  std::string page(options_.page_size, '\0');
  uint8_t* p = reinterpret_cast<uint8_t*>(page.data());
  std::memcpy(p, kHeaderMagic, sizeof(kHeaderMagic));
  EncodeFixed32(p + 8, kFormatVersion);
  EncodeFixed32(p + 12, static_cast<uint32_t>(options_.page_size));
  EncodeFixed32(p + 16, static_cast<uint32_t>(options_.key_size));
  EncodeFixed32(p + 20, static_cast<uint32_t>(options_.max_probe_pages));
  EncodeFixed64(p + 24, bucket_count_);
  EncodeFixed64(p + 32, size_bytes_);
  EncodeFixed64(p + 40, entry_count);
  EncodeFixed32(p + kHeaderCrcOffset, Crc32c(p, kHeaderCrcOffset));
  return page;
}

// Builds the file under a temporary name and renames it, so a crash during
// creation never leaves a half-initialized table under the real name.
Status DiskHashTable::Create() {
  const std::string tmp = options_.path + ".tmp";
  Status s = [&]() -> Status {
    std::unique_ptr<File> f;
    DEDUPV1_RETURN_IF_ERROR(env_->OpenFile(tmp, OpenMode::kTruncate, &f));
    DEDUPV1_RETURN_IF_ERROR(f->Allocate(0, (bucket_count_ + 1) * options_.page_size));
    std::string header = EncodeHeader(0);
    DEDUPV1_RETURN_IF_ERROR(f->Write(0, header.data(), header.size()));
    DEDUPV1_RETURN_IF_ERROR(f->Sync());
    f.reset();
    DEDUPV1_RETURN_IF_ERROR(env_->RenameFile(tmp, options_.path));
    return env_->SyncDir(DirName(options_.path));
  }();
  if (!s.ok()) {
    if (env_->FileExists(tmp)) (void)env_->DeleteFile(tmp);
    return s.WithContext("creating chunk index file " + options_.path);
  }
  return Status::OK();
}

Status DiskHashTable::ReadJournal(uint64_t max_pages, bool* valid, std::map<uint64_t, std::string>* images) {
  *valid = false;
  images->clear();
  uint64_t size = 0;
  DEDUPV1_RETURN_IF_ERROR(journal_->Size(&size));
  if (size < kJournalHeaderBytes + 4) return Status::OK();
  std::string data(size, '\0');
  DEDUPV1_RETURN_IF_ERROR(journal_->Read(0, size, data.data()));
  const uint8_t* p = reinterpret_cast<const uint8_t*>(data.data());
  if (std::memcmp(p, kJournalMagic, sizeof(kJournalMagic)) != 0) return Status::OK();
  const uint64_t page_size = DecodeFixed32(p + 8);
  const uint64_t count = DecodeFixed64(p + 16);
  if (page_size == 0 || count > size / (page_size + 8)) return Status::OK();
  if (kJournalHeaderBytes + count * (8 + page_size) + 4 != size) return Status::OK();
  if (DecodeFixed32(p + size - 4) != Crc32c(p, size - 4)) return Status::OK();
  // The journal is complete. It must fit this table; a complete journal that
  // does not is not ours to ignore silently.
  const uint64_t pages = max_pages;
  if (page_size != options_.page_size) {
    return Status::Corruption("chunk index journal " + journal_path_ + " has page size " +
                              std::to_string(page_size) + ", table has " +
                              std::to_string(options_.page_size));
  }
  size_t off = kJournalHeaderBytes;
  for (uint64_t i = 0; i < count; i++) {
    uint64_t page_no = DecodeFixed64(p + off);
    if (page_no >= pages) {
      return Status::Corruption("chunk index journal " + journal_path_ + " names page " +
                                std::to_string(page_no) + " beyond the table's " +
                                std::to_string(pages) + " pages");
    }
    (*images)[page_no] = data.substr(off + 8, page_size);
    off += 8 + page_size;
  }
  *valid = true;
  return Status::OK();
}

Status DiskHashTable::CheckGeometry(uint32_t page_size, uint32_t key_size, uint32_t max_probe_pages,
                                    uint64_t size_bytes, uint64_t bucket_count) {
  const std::string& file = options_.path;
  auto mismatch = [&](const char* what, uint64_t was, uint64_t now) {
    return Status::InvalidArgument("chunk index file " + file + " was created with " + what + " " +
                                   std::to_string(was) + ", config says " + std::to_string(now));
  };
  if (page_size != options_.page_size) return mismatch("page size", page_size, options_.page_size);
  if (key_size != options_.key_size) return mismatch("key size", key_size, options_.key_size);
  if (max_probe_pages != static_cast<uint32_t>(options_.max_probe_pages)) {
    return mismatch("max probe pages", max_probe_pages, options_.max_probe_pages);
  }
  if (size_bytes != size_bytes_) {
    if (!options_.adopt_file_size) return mismatch("size", size_bytes, size_bytes_);
    // Sizes need not be whole pages (chunk-index.size is any size; the
    // pages that fit are the table).
    if (size_bytes / options_.page_size < 2) {
      return Status::Corruption("chunk index file " + file + ": header size " + std::to_string(size_bytes) +
                                " holds less than two pages of " + std::to_string(options_.page_size));
    }
    SetGeometry(size_bytes);
  }
  if (bucket_count != bucket_count_) {
    return Status::Corruption("chunk index file " + file + ": header bucket count " +
                              std::to_string(bucket_count) + " does not match its geometry");
  }
  return Status::OK();
}

Status DiskHashTable::Recover() {
  const std::string& file = options_.path;
  // Read the header first: if it mismatches the options we refuse before
  // touching anything. The newest header may sit in the journal (the in-place
  // header write may be the torn one), so prefer a header image from there.
  std::string header_bytes(kHeaderBytes, '\0');
  DEDUPV1_RETURN_IF_ERROR(table_->Read(0, kHeaderBytes, header_bytes.data()));
  Header h;
  Status hs = ParseHeader(file, reinterpret_cast<const uint8_t*>(header_bytes.data()), &h);

  bool journal_valid = false;
  std::map<uint64_t, std::string> images;
  if (hs.ok()) {
    DEDUPV1_RETURN_IF_ERROR(CheckGeometry(h.page_size, h.key_size, h.max_probe_pages, h.size_bytes, h.bucket_count));
    DEDUPV1_RETURN_IF_ERROR(ReadJournal(bucket_count_ + 1, &journal_valid, &images));
  } else {
    // The header may have been torn by an in-place write; a valid journal
    // carrying page 0 repairs it. Geometry checks then use that header (the
    // journal's page numbers are checked against it).
    Status js = ReadJournal(std::numeric_limits<uint64_t>::max(), &journal_valid, &images);
    if (!js.ok() || !journal_valid || images.count(0) == 0) return hs;
    DEDUPV1_RETURN_IF_ERROR(
        ParseHeader(file, reinterpret_cast<const uint8_t*>(images[0].data()), &h));
    DEDUPV1_RETURN_IF_ERROR(CheckGeometry(h.page_size, h.key_size, h.max_probe_pages, h.size_bytes, h.bucket_count));
    if (!images.empty() && images.rbegin()->first > bucket_count_) {
      return Status::Corruption("chunk index journal " + journal_path_ + " names page " +
                                std::to_string(images.rbegin()->first) + " beyond the table's " +
                                std::to_string(bucket_count_ + 1) + " pages");
    }
  }

  uint64_t file_size = 0;
  DEDUPV1_RETURN_IF_ERROR(table_->Size(&file_size));
  if (file_size < (bucket_count_ + 1) * options_.page_size) {
    return Status::Corruption("chunk index file " + file + " is truncated: " +
                              std::to_string(file_size) + " bytes, expected " +
                              std::to_string((bucket_count_ + 1) * options_.page_size));
  }

  if (journal_valid) {
    // Redo: the batch was durable in the journal but its in-place writes may
    // not have completed.
    DEDUPV1_RETURN_IF_ERROR(WriteImagesInPlace(images));
    DEDUPV1_RETURN_IF_ERROR(table_->Sync());
    if (images.count(0) != 0) {
      DEDUPV1_RETURN_IF_ERROR(
          ParseHeader(file, reinterpret_cast<const uint8_t*>(images[0].data()), &h));
    }
  }
  uint64_t journal_size = 0;
  DEDUPV1_RETURN_IF_ERROR(journal_->Size(&journal_size));
  if (journal_size > 0) {
    // Either redone above or torn (its pages were never touched in place).
    DEDUPV1_RETURN_IF_ERROR(journal_->Truncate(0));
    DEDUPV1_RETURN_IF_ERROR(journal_->Sync());
  }
  entry_count_ = h.entry_count;
  return Status::OK();
}

Status DiskHashTable::CheckKey(const Fingerprint& fp) const {
  if (fp.size != options_.key_size) {
    return Status::InvalidArgument("fingerprint size " + std::to_string(fp.size) +
                                   " does not match chunk index key size " +
                                   std::to_string(options_.key_size));
  }
  return Status::OK();
}

Status DiskHashTable::CheckPage(uint64_t page_no, std::string* page) const {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(page->data());
  const uint32_t stored = DecodeFixed32(p);
  if (stored == 0 && IsAllZero(p, page->size())) {
    // Never written since the file was preallocated.
    FormatEmptyPage(page_no, page);
    return Status::OK();
  }
  const std::string where = "chunk index file " + options_.path + ": page " + std::to_string(page_no);
  if (stored != Crc32c(p + 4, page->size() - 4)) {
    return Status::Corruption(where + " checksum mismatch");
  }
  if (DecodeFixed64(p + 8) != page_no) {
    return Status::Corruption(where + " holds the image of page " +
                              std::to_string(DecodeFixed64(p + 8)) + " (misdirected write)");
  }
  if (PageCount(*page) > slots_per_page_) {
    return Status::Corruption(where + " claims " + std::to_string(PageCount(*page)) +
                              " entries, a page holds " + std::to_string(slots_per_page_));
  }
  return Status::OK();
}

Status DiskHashTable::ReadPage(uint64_t page_no, std::string* page) const {
  page->resize(options_.page_size);
  DEDUPV1_RETURN_IF_ERROR(table_->Read(PageOffset(page_no), options_.page_size, page->data()));
  return CheckPage(page_no, page);
}

Status DiskHashTable::ReadPageCached(uint64_t page_no, std::string* page) const {
  TablePageCache* cache = options_.page_cache.get();
  if (cache != nullptr && cache->Lookup(table_id_, page_no, page)) return Status::OK();
  DEDUPV1_RETURN_IF_ERROR(ReadPage(page_no, page));
  if (cache != nullptr) cache->Insert(table_id_, page_no, *page);
  return Status::OK();
}

namespace {

// Index of |fp| in |page|, or -1.
int FindSlot(const std::string& page, const Fingerprint& fp, size_t key_size, size_t entry_size) {
  const uint8_t* p = reinterpret_cast<const uint8_t*>(page.data()) + kPageHeaderBytes;
  const int n = PageCount(page);
  for (int i = 0; i < n; i++) {
    if (std::memcmp(p + i * entry_size, fp.bytes, key_size) == 0) return i;
  }
  return -1;
}

void DecodeSlot(const std::string& page, int slot, size_t key_size, size_t entry_size,
                ChunkIndexEntry* e) {
  const uint8_t* s =
      reinterpret_cast<const uint8_t*>(page.data()) + kPageHeaderBytes + slot * entry_size;
  e->container = DecodeFixed64(s + key_size);
  e->usage_count = DecodeFixed32(s + key_size + 8);
  e->committed = (s[key_size + 12] & kEntryCommitted) != 0;
  e->last_event_id = DecodeFixed64(s + key_size + 13);
}

void EncodeSlot(std::string* page, int slot, size_t key_size, size_t entry_size,
                const Fingerprint& fp, const ChunkIndexEntry& e) {
  uint8_t* s = reinterpret_cast<uint8_t*>(page->data()) + kPageHeaderBytes + slot * entry_size;
  std::memcpy(s, fp.bytes, key_size);
  EncodeFixed64(s + key_size, e.container);
  EncodeFixed32(s + key_size + 8, e.usage_count);
  s[key_size + 12] = e.committed ? kEntryCommitted : 0;
  EncodeFixed64(s + key_size + 13, e.last_event_id);
}

// Removes a slot by moving the last entry into the hole; zeroes the freed slot.
void RemoveSlot(std::string* page, int slot, size_t entry_size) {
  uint8_t* base = reinterpret_cast<uint8_t*>(page->data()) + kPageHeaderBytes;
  const int last = PageCount(*page) - 1;
  if (slot != last) std::memcpy(base + slot * entry_size, base + last * entry_size, entry_size);
  std::memset(base + last * entry_size, 0, entry_size);
  SetPageCount(page, static_cast<uint16_t>(last));
}

}  // namespace

Status DiskHashTable::Get(const Fingerprint& fp, ChunkIndexEntry* entry) {
  DEDUPV1_RETURN_IF_ERROR(CheckKey(fp));
  const uint64_t home = HomeBucket(fp);
  std::string buf;
  std::shared_lock<std::shared_mutex> l(pages_mu_);
  for (int i = 0; i < probe_pages_; i++) {
    const uint64_t page_no = ProbePage(home, i);
    const std::string* page;
    auto it = pending_.find(page_no);
    if (it != pending_.end()) {
      page = &it->second;
    } else {
      DEDUPV1_RETURN_IF_ERROR(ReadPageCached(page_no, &buf));
      page = &buf;
    }
    int slot = FindSlot(*page, fp, options_.key_size, entry_size_);
    if (slot >= 0) {
      DecodeSlot(*page, slot, options_.key_size, entry_size_, entry);
      return Status::OK();
    }
    if (PageCount(*page) < slots_per_page_ && (PageFlags(*page) & kPageOverflowed) == 0) break;
  }
  return Status::NotFound("fingerprint not in chunk index");
}

Status DiskHashTable::Apply(const std::vector<Op>& ops) {
  for (const Op& op : ops) DEDUPV1_RETURN_IF_ERROR(CheckKey(op.fp));
  std::lock_guard<std::mutex> l(apply_mu_);
  // The journal still carries the previous batch until it is fully in place.
  DEDUPV1_RETURN_IF_ERROR(FinishPendingLocked());

  // Every page is loaded at most once and changed in memory; nothing touches
  // the file until the whole batch is known to fit.
  std::map<uint64_t, std::string> pages;
  std::set<uint64_t> dirty;
  auto load = [&](uint64_t page_no, std::string** page) -> Status {
    auto it = pages.find(page_no);
    if (it == pages.end()) {
      std::string buf;
      DEDUPV1_RETURN_IF_ERROR(ReadPageCached(page_no, &buf));
      it = pages.emplace(page_no, std::move(buf)).first;
    }
    *page = &it->second;
    return Status::OK();
  };

  const uint64_t old_count = entry_count_.load();
  uint64_t count = old_count;
  for (const Op& op : ops) {
    const uint64_t home = HomeBucket(op.fp);
    std::string* found_page = nullptr;
    uint64_t found_no = 0;
    int found_slot = -1;
    for (int i = 0; i < probe_pages_; i++) {
      const uint64_t page_no = ProbePage(home, i);
      std::string* page = nullptr;
      DEDUPV1_RETURN_IF_ERROR(load(page_no, &page));
      int slot = FindSlot(*page, op.fp, options_.key_size, entry_size_);
      if (slot >= 0) {
        found_page = page;
        found_no = page_no;
        found_slot = slot;
        break;
      }
      if (PageCount(*page) < slots_per_page_ && (PageFlags(*page) & kPageOverflowed) == 0) break;
    }

    if (op.erase) {
      if (found_page != nullptr) {
        RemoveSlot(found_page, found_slot, entry_size_);
        dirty.insert(found_no);
        count--;
      }
      continue;
    }
    if (found_page != nullptr) {
      EncodeSlot(found_page, found_slot, options_.key_size, entry_size_, op.fp, op.entry);
      dirty.insert(found_no);
      continue;
    }
    if (count + 1 > capacity_) {
      return Status::NoSpace("chunk index full: fill limit of " +
                             std::to_string(static_cast<int>(options_.max_fill * 100 + 0.5)) +
                             "% reached (" + std::to_string(count) + " of " +
                             std::to_string(capacity_) + " entries)");
    }
    bool placed = false;
    for (int i = 0; i < probe_pages_ && !placed; i++) {
      const uint64_t page_no = ProbePage(home, i);
      std::string* page = nullptr;
      DEDUPV1_RETURN_IF_ERROR(load(page_no, &page));
      const int n = PageCount(*page);
      if (static_cast<size_t>(n) < slots_per_page_) {
        EncodeSlot(page, n, options_.key_size, entry_size_, op.fp, op.entry);
        SetPageCount(page, static_cast<uint16_t>(n + 1));
        dirty.insert(page_no);
        placed = true;
      } else if ((PageFlags(*page) & kPageOverflowed) == 0) {
        SetPageFlags(page, PageFlags(*page) | kPageOverflowed);
        dirty.insert(page_no);
      }
    }
    if (!placed) {
      return Status::NoSpace("chunk index full: bucket " + std::to_string(home) +
                             " and its overflow pages are full");
    }
    count++;
  }

  if (dirty.empty() && count == old_count) return Status::OK();
  std::map<uint64_t, std::string> images;
  for (uint64_t page_no : dirty) {
    std::string& page = pages[page_no];
    SealPage(&page);
    images.emplace(page_no, std::move(page));
  }
  if (count != old_count) images.emplace(0, EncodeHeader(count));

  DEDUPV1_RETURN_IF_ERROR(WriteJournal(images));
  // From here the batch is durable: install it so readers see it while it is
  // written in place.
  std::vector<uint64_t> replaced;
  if (options_.page_cache) {
    for (const auto& entry : images) replaced.push_back(entry.first);
  }
  {
    std::unique_lock<std::shared_mutex> w(pages_mu_);
    // The cache forgets the replaced pages now, under the exclusive lock: no
    // reader can put an older image back after this (table_page_cache.h);
    // until the batch is in place, reads take its images from pending_.
    if (options_.page_cache) options_.page_cache->Erase(table_id_, replaced);
    pending_ = std::move(images);
    entry_count_ = count;
  }
  return FinishPendingLocked();
}

Status DiskHashTable::WriteJournal(const std::map<uint64_t, std::string>& images) {
  // Streamed through a buffer of about kJournalBufferBytes, the CRC computed
  // as it goes, so a batch's page images are not held a second time (a
  // write-back batch of a large table touches tens of thousands of pages).
  // Truncate first: a longer stale or torn journal must not leave a tail.
  DEDUPV1_RETURN_IF_ERROR(journal_->Truncate(0));
  std::string buf;
  buf.reserve(kJournalBufferBytes + 8 + options_.page_size);
  uint64_t off = 0;
  uint32_t crc = 0;
  auto write_buf = [&]() -> Status {
    crc = Crc32c(buf.data(), buf.size(), crc);
    DEDUPV1_RETURN_IF_ERROR(journal_->Write(off, buf.data(), buf.size()));
    off += buf.size();
    buf.clear();
    return Status::OK();
  };
  buf.append(kJournalMagic, sizeof(kJournalMagic));
  PutFixed32(&buf, static_cast<uint32_t>(options_.page_size));
  PutFixed32(&buf, 0);
  PutFixed64(&buf, images.size());
  for (const auto& [page_no, image] : images) {
    PutFixed64(&buf, page_no);
    buf.append(image);
    if (buf.size() >= kJournalBufferBytes) DEDUPV1_RETURN_IF_ERROR(write_buf());
  }
  // The rest and the CRC in one write (a small batch's journal is one write).
  crc = Crc32c(buf.data(), buf.size(), crc);
  PutFixed32(&buf, crc);
  DEDUPV1_RETURN_IF_ERROR(journal_->Write(off, buf.data(), buf.size()));
  return journal_->Sync();
}

Status DiskHashTable::WriteImagesInPlace(const std::map<uint64_t, std::string>& images) {
  // Bucket pages first, the header last.
  for (const auto& [page_no, image] : images) {
    if (page_no == 0) continue;
    DEDUPV1_RETURN_IF_ERROR(table_->Write(PageOffset(page_no), image.data(), image.size()));
  }
  auto header = images.find(0);
  if (header != images.end()) {
    DEDUPV1_RETURN_IF_ERROR(table_->Write(0, header->second.data(), header->second.size()));
  }
  return Status::OK();
}

Status DiskHashTable::FinishPendingLocked() {
  if (pending_.empty()) return Status::OK();
  Status s = WriteImagesInPlace(pending_);
  if (s.ok()) s = table_->Sync();
  // A journal that outlives its batch would merely be redone (idempotent), so
  // emptying it needs no sync of its own; the next journal write syncs.
  if (s.ok()) s = journal_->Truncate(0);
  if (!s.ok()) {
    return s.WithContext("chunk index " + options_.path +
                         ": writing a batch in place failed (it is safe in the journal and "
                         "will be retried)");
  }
  std::unique_lock<std::shared_mutex> w(pages_mu_);
  pending_.clear();
  return Status::OK();
}

Status DiskHashTable::Sync() {
  std::lock_guard<std::mutex> l(apply_mu_);
  DEDUPV1_RETURN_IF_ERROR(FinishPendingLocked());
  return table_->Sync();
}

Status DiskHashTable::Verify(uint64_t* pages_checked,
                             const std::function<void(const Fingerprint&, const ChunkIndexEntry&)>& visit) {
  std::lock_guard<std::mutex> l(apply_mu_);
  *pages_checked = 0;
  const std::string& file = options_.path;

  Header h;
  {
    std::string header(kHeaderBytes, '\0');
    auto it = pending_.find(0);
    if (it != pending_.end()) {
      header = it->second.substr(0, kHeaderBytes);
    } else {
      DEDUPV1_RETURN_IF_ERROR(table_->Read(0, kHeaderBytes, header.data()));
    }
    DEDUPV1_RETURN_IF_ERROR(ParseHeader(file, reinterpret_cast<const uint8_t*>(header.data()), &h));
    ++*pages_checked;
  }

  // Read in runs of pages to keep the scan sequential.
  std::string run;
  uint64_t entries = 0;
  for (uint64_t first = 1; first <= bucket_count_; first += kRunPages) {
    const uint64_t n = std::min(kRunPages, bucket_count_ + 1 - first);
    DEDUPV1_RETURN_IF_ERROR(ReadRun(first, n, &run, [&](uint64_t page_no, const std::string& page) -> Status {
      const int count = PageCount(page);
      for (int slot = 0; slot < count; slot++) {
        Fingerprint fp(reinterpret_cast<const uint8_t*>(page.data()) + kPageHeaderBytes +
                           slot * entry_size_,
                       options_.key_size);
        const uint64_t home = HomeBucket(fp);
        const uint64_t distance = (page_no - 1 + bucket_count_ - home) % bucket_count_;
        if (distance >= static_cast<uint64_t>(probe_pages_)) {
          return Status::Corruption("chunk index file " + file + ": page " +
                                    std::to_string(page_no) + " holds fingerprint " + fp.ToHex() +
                                    " of bucket " + std::to_string(home) +
                                    ", outside its probe range");
        }
        if (visit) {
          ChunkIndexEntry entry;
          DecodeSlot(page, slot, options_.key_size, entry_size_, &entry);
          visit(fp, entry);
        }
      }
      entries += count;
      ++*pages_checked;
      return Status::OK();
    }));
  }
  if (entries != h.entry_count || entries != entry_count_.load()) {
    return Status::Corruption("chunk index file " + file + ": header says " +
                              std::to_string(h.entry_count) + " entries, pages hold " +
                              std::to_string(entries));
  }
  return Status::OK();
}

Status DiskHashTable::ForEachEntry(
    const std::function<void(const Fingerprint&, const ChunkIndexEntry&)>& visit) {
  std::vector<std::pair<Fingerprint, ChunkIndexEntry>> entries;
  for (uint64_t first = 1; first <= bucket_count_; first += kRunPages) {
    // Each run under the page lock (EntriesOfPages); Apply goes on between
    // runs, and |visit| runs without the lock.
    DEDUPV1_RETURN_IF_ERROR(EntriesOfPages(first, std::min(kRunPages, bucket_count_ + 1 - first), &entries));
    for (const auto& [fp, entry] : entries) visit(fp, entry);
  }
  return Status::OK();
}

Status DiskHashTable::EntriesOfPages(uint64_t first, uint64_t n,
                                     std::vector<std::pair<Fingerprint, ChunkIndexEntry>>* out) {
  out->clear();
  if (first < 1 || first > bucket_count_ || n > bucket_count_ + 1 - first) {
    return Status::InvalidArgument("chunk index " + options_.path + ": pages " + std::to_string(first) + ".." +
                                   std::to_string(first + n) + " are not bucket pages of its " +
                                   std::to_string(bucket_count_) + " buckets");
  }
  std::string run;
  std::shared_lock<std::shared_mutex> l(pages_mu_);
  return ReadRun(first, n, &run, [&](uint64_t, const std::string& page) -> Status {
    const int count = PageCount(page);
    for (int slot = 0; slot < count; slot++) {
      Fingerprint fp(reinterpret_cast<const uint8_t*>(page.data()) + kPageHeaderBytes + slot * entry_size_,
                     options_.key_size);
      ChunkIndexEntry entry;
      DecodeSlot(page, slot, options_.key_size, entry_size_, &entry);
      out->emplace_back(fp, entry);
    }
    return Status::OK();
  });
}

Status DiskHashTable::ReadRun(
    uint64_t first, uint64_t n, std::string* run,
    const std::function<Status(uint64_t page_no, const std::string& page)>& page_fn) const {
  const size_t ps = options_.page_size;
  run->resize(n * ps);
  DEDUPV1_RETURN_IF_ERROR(table_->Read(PageOffset(first), n * ps, run->data()));
  std::string page;
  for (uint64_t i = 0; i < n; i++) {
    const uint64_t page_no = first + i;
    auto it = pending_.find(page_no);
    if (it != pending_.end()) {
      page = it->second;
    } else {
      page.assign(*run, i * ps, ps);
    }
    DEDUPV1_RETURN_IF_ERROR(CheckPage(page_no, &page));
    DEDUPV1_RETURN_IF_ERROR(page_fn(page_no, page));
  }
  return Status::OK();
}

}  // namespace dedupv1
