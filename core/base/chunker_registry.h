// The chunker registry: every chunker the config's `chunking` key can name,
// with what it checks beyond the common rules and how it is built. It is the
// one list of chunker names; Chunker::Create and the options use it.
//
// Adding a chunker: its class in core/ (a Chunker with `static constexpr
// char kName[]`) and one line in chunker_registry.cc.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/base/chunker.h"
#include "core/base/status.h"

namespace dedupv1 {

struct ChunkerRegistration {
  const char* name;
  // Checks what this chunker needs beyond the common rules of
  // Chunker::Create. |prefix| starts every message ("chunker (rabin): ").
  Status (*validate)(const ChunkerOptions& options, const std::string& prefix);
  // |options| are validated.
  std::unique_ptr<Chunker> (*create)(const ChunkerOptions& options);
};

// The registration named |name|, or null.
const ChunkerRegistration* FindChunker(const std::string& name);
// Every registered chunker name, in the registry's order.
std::vector<std::string> ChunkerNames();

}  // namespace dedupv1
