// libFuzzer target: `db import` of a measurements file (JSON lines, plain or gzip) into a real
// SQLite database. A refused file names itself in one InputError line and changes nothing (the
// transaction rolls back); an accepted one leaves only schedules that read back valid, and the
// winners export. Anything else thrown (a JSON type error, std::out_of_range) is a finding.

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>

#include "base/errors.hpp"
#include "db/database.hpp"

namespace {

using namespace sparsetune;

bool Same(const DatabaseStats& a, const DatabaseStats& b) {
  return a.matrices == b.matrices && a.schedules == b.schedules &&
         a.measurements == b.measurements && a.winners == b.winners && a.failures == b.failures &&
         a.machines == b.machines;
}

struct Scratch {
  std::string dir;
  std::unique_ptr<Database> db;
  int inputs = 0;
  Scratch() {
    char name[] = "/tmp/fuzz-db-import-XXXXXX";
    if (!mkdtemp(name)) std::abort();
    dir = name;
  }
  ~Scratch() {
    db.reset();
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  // A fresh database now and then, so that accepted imports do not pile up.
  Database& Fresh() {
    if (!db || ++inputs % 256 == 0) {
      db.reset();
      for (const char* suffix : {"", "-wal", "-shm"}) std::remove((dir + "/t.db" + suffix).c_str());
      db = Database::Open(dir + "/t.db", OpenMode::kReadWrite);
    }
    return *db;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Scratch scratch;
  const std::string path = scratch.dir + "/in.jsonl";
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  Database& db = scratch.Fresh();
  const DatabaseStats before = db.Statistics();
  try {
    db.ImportMeasurements(path);
  } catch (const InputError& e) {
    const std::string message = e.what();
    if (message.rfind(path, 0) != 0 || message.find('\n') != std::string::npos) std::abort();
    if (!Same(db.Statistics(), before)) std::abort();  // rolled back whole
    return 0;
  }
  // Accepted: every stored schedule reads back valid, and the winners export.
  const DatabaseStats after = db.Statistics();
  for (int64_t id = 1; id <= after.schedules; ++id) {
    try {
      db.GetSchedule(id);
    } catch (const InputError&) {
      std::abort();
    }
  }
  std::ostringstream winners;
  if (db.ExportWinners(winners) != after.winners) std::abort();
  return 0;
}
