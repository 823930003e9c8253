"""The iot query types (TSBS's thirteen), each a custom shape: registered in
catalog.CATALOG and catalog.CUSTOM (columns and reference SQL per type)."""
