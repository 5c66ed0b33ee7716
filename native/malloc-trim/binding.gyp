{
  "targets": [
    {
      "target_name": "malloc_trim",
      "sources": ["malloc_trim.c"],
      "cflags": ["-O2", "-Wall", "-Wextra"]
    }
  ]
}
