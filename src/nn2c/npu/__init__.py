"""--npu: offload to an Arm Ethos-U microNPU. partition.py decides (Vela: what may run on the NPU; a
cost model: what should), vela.py is the bridge to Vela, emit.py writes the C (Vela's command streams
and weights, the driver calls), stage.py hooks the partition into compile_model. The default build
runs every NPU subgraph through nn2c's own kernels (simulation, tested bit-exact against TFLite
Micro); -DNN2C_ETHOSU runs them on the NPU through Arm's Ethos-U core driver."""
