// The phonegpt commands, one file each; main.cpp dispatches to them.
#pragma once

namespace cli {

int cmd_train(int argc, char** argv);   // train.cpp
int cmd_eval(int argc, char** argv);    // eval.cpp (and eval_folder.cpp)
int cmd_sample(int argc, char** argv);  // sample.cpp
int cmd_export(int argc, char** argv);  // export.cpp
int cmd_import(int argc, char** argv);  // import.cpp
int cmd_tokenizer(int argc, char** argv);  // tokenizer.cpp: info, encode, decode
int cmd_lora(int argc, char** argv);       // lora.cpp: train, merge, unmerge, info, export-peft, import-peft

}  // namespace cli
