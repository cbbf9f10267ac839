// The table check at open: DescribeTable, CreateTable when allowed, wait until ACTIVE.

#include <thread>

#include "dynamodb_store.hpp"

namespace leader::dynamodb {
namespace {

BackendError precondition(const Config& c, const std::string& why) {
  return BackendError(
      ErrorCode::failed_precondition, "dynamodb",
      "DynamoDB table '" + c.table + "' at " + c.endpoint + " (region " + c.region + "): " + why);
}

nlohmann::json create_request(const Config& c) {
  return {{"TableName", c.table},
          {"AttributeDefinitions",
           {{{"AttributeName", kPartitionKey}, {"AttributeType", "S"}},
            {{"AttributeName", kSortKey}, {"AttributeType", "S"}}}},
          {"KeySchema",
           {{{"AttributeName", kPartitionKey}, {"KeyType", "HASH"}},
            {{"AttributeName", kSortKey}, {"KeyType", "RANGE"}}}},
          {"BillingMode", "PAY_PER_REQUEST"}};
}

bool has_our_key_schema(const nlohmann::json& table) {
  const nlohmann::json expected = {{{"AttributeName", kPartitionKey}, {"KeyType", "HASH"}},
                                   {{"AttributeName", kSortKey}, {"KeyType", "RANGE"}}};
  auto ks = table.find("KeySchema");
  return ks != table.end() && *ks == expected;
}

}  // namespace

void ensure_table(Client& client, Deadline deadline) {
  const Config& c = client.config();
  const nlohmann::json describe = {{"TableName", c.table}};
  Response r = client.post("DescribeTable", describe, deadline);
  if (r.error_type == "ResourceNotFoundException") {
    if (!c.create_table)
      throw precondition(c,
                         "does not exist; create it with keys pk (S, HASH) and sk (S, RANGE) or "
                         "allow create_table=true");
    Response created = client.post("CreateTable", create_request(c), deadline);
    if (!created.ok() && created.error_type != "ResourceInUseException")
      client.fail(created, "CreateTable");
    r = client.post("DescribeTable", describe, deadline);
  }
  while (true) {
    if (!r.ok()) client.fail(r, "DescribeTable");
    const nlohmann::json& table = r.body["Table"];
    if (!has_our_key_schema(table))
      throw precondition(c, "has another key schema " +
                                table.value("KeySchema", nlohmann::json{}).dump() +
                                "; this store needs pk (S, HASH) and sk (S, RANGE)");
    if (table.value("TableStatus", "") == "ACTIVE") return;
    if (deadline.remaining() < Duration{100})
      throw BackendError(ErrorCode::deadline_exceeded, "dynamodb",
                         "DynamoDB table '" + c.table + "' did not become ACTIVE in time");
    std::this_thread::sleep_for(Duration{50});
    r = client.post("DescribeTable", describe, deadline);
  }
}

}  // namespace leader::dynamodb
