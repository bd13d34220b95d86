// Reading a run journal (OUT/journal.sqlite) from a test as another process would: a read-only
// SQLite connection, so tests can check what a killed or finished run left behind.
#pragma once

#include <cstdint>
#include <string>

namespace hb::testing {

// The integer the query `sql` (e.g. "SELECT COUNT(*) FROM rows WHERE status = 'ok'") returns
// first; -1 when the journal is missing or cannot be read. Waits up to 1 s for a writer's lock.
int64_t QueryJournalInt(const std::string& journal, const std::string& sql);

}  // namespace hb::testing
