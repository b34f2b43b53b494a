/* nn2c kernel library: the optional kernel paths a build leaves out.
 *
 * nn2c writes this file into each output folder (codegen/kernel_config.py) with a line
 * `#define NN2C_OMIT_<PATH> 1` for every optional path none of the model's layers takes, so that
 * the flash holds only the code the model runs. This copy, for building the kernels on their own
 * (tests), leaves nothing out.
 */
#ifndef NN2C_CONFIG_H
#define NN2C_CONFIG_H
#endif
