// phonegpt eval: one checkpoint (eval.cpp) or a folder of them (eval_folder.cpp).
#pragma once

#include <string>

#include "cli.hpp"

namespace cli {

// What eval scores: the text, its split and the windows.
struct EvalRequest {
    std::string data_path;
    double train_fraction = 0.9;
    std::string split;  // val, train or all
    int threads = 0;
};

// One checkpoint scored the way `phonegpt eval` scores it: the text encoded with the
// checkpoint's own tokenizer, split at --train-fraction, the chosen split scored with
// pg_session_evaluate in windows of --window every --stride. A loss that is not finite is a
// RuntimeError with status PG_ERR_NOT_FINITE, never a score.
struct CheckpointScore {
    std::string path;
    Json model;
    int32_t window = 0, stride = 0;
    EvalFigures figures;
};
CheckpointScore score_checkpoint(const std::string& path, const Options& opt, const EvalRequest& request);

int eval_folder(const Options& opt, const EvalRequest& request);

}  // namespace cli
