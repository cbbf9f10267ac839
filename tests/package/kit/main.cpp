// A third party's store run through the installed contract kit: here the memory store.
#include <leader/testing/contract.hpp>
LEADER_STORE_CONTRACT(MemoryViaKit, [] { return leader::open("memory:"); });
