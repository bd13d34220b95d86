// Transitional: grader_client.h moved to grader_client/. Remove once nothing includes this path
// (orchestrator/run/run_command.cc and dispatcher.h are rewritten on other branches).
#pragma once

#include "grader_client/grader_client.h"
