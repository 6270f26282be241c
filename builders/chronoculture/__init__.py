"""ChronoCulture builder: WVS and ISSP survey files -> temporal pairs (paper 001)."""
