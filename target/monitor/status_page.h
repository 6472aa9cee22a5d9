// The monitor's live status page (GET /): one self-contained HTML document
// with its CSS and JavaScript inline. It loads nothing from other hosts and
// needs no build step; it polls /stats (every second) and /history (every
// five seconds) of the server that served it and updates in place.
//
// Elements the tests read: #dedup-ratio, #write-now and #read-now carry the
// raw figure in data-value (and the sample time in data-time), next to the
// human-readable text. The lists of the chunk index, block index,
// containers, log and idle sections come from the metric table
// (metric_table.h, StatusPageListsScript).
#pragma once

#include <string>

namespace dedupv1 {

const std::string& StatusPageHtml();

}  // namespace dedupv1
