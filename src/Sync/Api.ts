/**
 * Following the catalogue (issue 30): its change feed, and (GetCatalogueSnapshot) every listed
 * node at once. Public, like the listings they replace.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { CursorExpired, ServiceUnavailable } from "../Domain/ApiErrors.ts"
import { CatalogueChanges, CatalogueSnapshot, Cursor } from "../Domain/Sync.ts"
import { PageSize } from "../Catalog/Api.ts"

/** Changes served per page: larger requests are clamped, as list pages are. */
export const maxChanges = 1000
export const defaultChanges = 500

const ChangesLimit = PageSize(maxChanges, defaultChanges, "Changes")

export class CatalogueSyncApi extends HttpApiGroup.make("catalogueSync")
  .add(
    HttpApiEndpoint.get("getCatalogueSnapshot", "/catalogue/snapshot", { success: CatalogueSnapshot, error: [ServiceUnavailable] })
      .annotate(OpenApi.Summary, "Every listed node with its latest version, in one answer")
      .annotate(
        OpenApi.Description,
        "Public. The nodes as GET /nodes answers them, by id, cut at a change-feed cursor: take it once, then follow " +
          "GET /catalogue/changes from its cursor. Rebuilt in the background a few seconds after the catalogue changes; " +
          "every instance serves the same bytes for a cursor. Sent in br or gzip as Accept-Encoding asks (stored " +
          "compressed), with an ETag: If-None-Match answers 304 while it is unchanged. 503 until the first one is built."
      )
  )
  .add(
    HttpApiEndpoint.get("listCatalogueChanges", "/catalogue/changes", {
      query: {
        cursor: Cursor.annotateKey({ description: "Where to read from: the snapshot's cursor, then each page's next_cursor" }),
        limit: ChangesLimit
      },
      success: CatalogueChanges,
      error: [CursorExpired]
    })
      .annotate(OpenApi.Summary, "The catalogue's changes after a cursor, oldest first")
      .annotate(
        OpenApi.Description,
        "Public. Nodes created, changed (not their download counts) and deleted; versions published, changed, " +
          "their status changed, yanked, unyanked and deleted; each with the status after it. Following next_cursor " +
          "never misses a change nor repeats one, however writers commit: changes come in the order their " +
          "transactions committed, each served once committed. 410 cursor_expired: the cursor is older than the " +
          "feed keeps (CHANGE_FEED_RETENTION_DAYS): take the snapshot. 400: a cursor the feed never issued."
      )
  )
  .annotate(OpenApi.Title, "Catalogue sync")
{}
