"""IoTDB's dialect (phases 3-5): the tree-model SQL of the basic shapes and of the iot types."""
