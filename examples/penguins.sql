-- Palmer penguins: size measurements of 344 penguins of three species on three islands of the
-- Palmer Archipelago, Antarctica (Gorman, Williams & Fraser 2014; data set by Horst, Hill &
-- Gorman, CC0). penguins.csv is the penguins.csv shipped in the PyPI package palmerpenguins
-- 0.1.6 with one column added in front: `id`, the row number, as the primary key.
-- Missing measurements are written NA: import with `--null NA`.
CREATE TABLE penguins (
    id                INT PRIMARY KEY,
    species           TEXT NOT NULL,
    island            TEXT NOT NULL,
    bill_length_mm    DECIMAL(4,1),
    bill_depth_mm     DECIMAL(4,1),
    flipper_length_mm SMALLINT,
    body_mass_g       INT,
    sex               TEXT,
    year              SMALLINT NOT NULL
);
CREATE INDEX by_species_island ON penguins (species, island);
