"""Writing nn2c graphs back out as models other tools run (a .tflite flatbuffer)."""

from nn2c.export.tflite_writer import graph_to_tflite, write_tflite

__all__ = ["graph_to_tflite", "write_tflite"]
