"""PTX kernel templates, shipped inside the micatool package as data."""
