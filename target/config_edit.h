// Edits of an admin's config file by the admin commands (dedupv1d volume add,
// grow, policy and remove): one volume line added, removed or its size changed, with
// every other line (comments, order, other keys) kept as it was. The edits
// are text functions; the caller validates the result as a whole config
// (ServiceOptions) before ReplaceConfigFile writes it.
#pragma once

#include <string>

#include "core/base/env.h"
#include "core/base/status.h"

namespace dedupv1 {

// |text| with "volume = NAME SIZE" added after its last volume line (at the
// end when it has none); with " policy=POLICY" when |policy| is not empty.
std::string AddVolumeLine(const std::string& text, const std::string& name, const std::string& size,
                          const std::string& policy = "");

// |text| with the size of volume NAME's line replaced by |size| in |*out|.
// NotFound when no volume line names it.
Status SetVolumeSize(const std::string& text, const std::string& name, const std::string& size, std::string* out);

// |text| with volume NAME's line saying "policy=POLICY" in |*out| (the word
// replaced or added after the size; other words and the comment kept), or
// with no policy word when |policy| is "inline", the default. NotFound when
// no volume line names it.
Status SetVolumePolicy(const std::string& text, const std::string& name, const std::string& policy,
                       std::string* out);

// |text| without volume NAME's line in |*out|. NotFound when no volume line
// names it.
Status RemoveVolumeLine(const std::string& text, const std::string& name, std::string* out);

// Replaces the file at |path| with |text| atomically (a crash leaves the old
// or the new file whole), keeping its owner and permission bits: a config may
// hold a CHAP secret readable by root only, and the new text is never
// readable by more than that on its way. A symlink is followed: the file it
// names is replaced, the link stays.
Status ReplaceConfigFile(Env* env, const std::string& path, const std::string& text);

}  // namespace dedupv1
