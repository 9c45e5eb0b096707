"""The pipeline's database: migrations (`pathwatch db migrate`) and retention (`pathwatch db retention`)."""
