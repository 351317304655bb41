#include "db/machine_rows.hpp"

#include "base/errors.hpp"

namespace sparsetune {

int64_t FindOrInsertMachine(Connection& connection, const std::string& key,
                            const MachineInfo& info) {
  Statement insert = connection.Prepare(
      "INSERT INTO machines (machine_key, cpu_model, cores, threads, l1d_bytes, l2_bytes, "
      "l3_bytes, isa, compiler, compiler_version, flags) VALUES (?,?,?,?,?,?,?,?,?,?,?) "
      "ON CONFLICT (machine_key) DO NOTHING");
  insert.Bind(1, key)
      .Bind(2, info.cpu_model)
      .Bind(3, info.cores)
      .Bind(4, info.threads)
      .Bind(5, info.l1d_bytes)
      .Bind(6, info.l2_bytes)
      .Bind(7, info.l3_bytes)
      .Bind(8, info.isa)
      .Bind(9, info.compiler)
      .Bind(10, info.compiler_version)
      .Bind(11, info.flags)
      .Run();
  Statement find = connection.Prepare("SELECT id FROM machines WHERE machine_key = ?");
  find.Bind(1, key);
  if (!find.Step()) throw InternalError("machine row " + key + " missing after insert");
  return find.Int(0);
}

}  // namespace sparsetune
