// phonegpt export / import: the llm.c and safetensors formats of pg_model_export/import.
#pragma once

#include "cli.hpp"

namespace cli {

// --format llmc|safetensors (required).
pg_interop_format interop_format(const Options& opt);

}  // namespace cli
