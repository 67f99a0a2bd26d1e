from cumtool.launch import main

# Guarded: --engine dask spawns worker processes, which import the main module again.
if __name__ == "__main__":
    main()
