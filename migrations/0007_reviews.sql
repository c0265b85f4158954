-- Reviews of nodes: one star rating (1 to 5) per user and node; rating again replaces the star.
-- `nodes.rating` is the exact mean of a node's current stars, recomputed by every review while it
-- holds the node's row lock (src/Reviews/Repo.ts). A node nobody reviewed keeps the rating it had
-- (none, or a seeded one).
CREATE TABLE node_reviews (
  node_id     text COLLATE "C" NOT NULL REFERENCES nodes (id) ON DELETE CASCADE,
  -- no cascade: deleting a user would change ratings behind the reviews' backs
  user_id     text NOT NULL REFERENCES users (id),
  star        smallint NOT NULL CHECK (star BETWEEN 1 AND 5),
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (node_id, user_id)
);
CREATE INDEX node_reviews_user ON node_reviews (user_id);
