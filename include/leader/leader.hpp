#pragma once
/// @file leader.hpp
/// The whole public API of the core: options, results, electors, stores, open().

#include "leader/campaign.hpp"
#include "leader/context.hpp"
#include "leader/elector.hpp"
#include "leader/errors.hpp"
#include "leader/events.hpp"
#include "leader/group.hpp"
#include "leader/history.hpp"
#include "leader/names.hpp"
#include "leader/open.hpp"
#include "leader/options.hpp"
#include "leader/result.hpp"
#include "leader/store.hpp"
#include "leader/strategic.hpp"
#include "leader/time.hpp"
#include "leader/uri.hpp"
