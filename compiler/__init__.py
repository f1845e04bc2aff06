"""nlndl compiler: program sketches and Tanner graphs to index arrays (numpy, never torch)."""
