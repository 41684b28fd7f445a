//! `report.html`: `report.md` rendered to HTML with every SVG it shows (charts, timelines)
//! inlined, so the one file opens in a browser with nothing else beside it and no network.

use std::path::Path;

const STYLE: &str = "body{font-family:sans-serif;max-width:1300px;margin:2em auto;padding:0 1em;\
color:#222}table{border-collapse:collapse;margin:1em 0;font-size:13px}td,th{border:1px solid \
#ccc;padding:3px 6px;vertical-align:top}th{background:#f2f2f2}tr:nth-child(even){background:#fafafa}\
svg{max-width:100%;height:auto}code{background:#f4f4f4}";

/// The HTML page for `markdown`, reading the SVGs it embeds from `dir`.
pub fn render(markdown: &str, dir: &Path) -> String {
    use pulldown_cmark::{html, Event, Options, Parser, Tag, TagEnd};
    let mut in_svg_image = false;
    let events = Parser::new_ext(markdown, Options::ENABLE_TABLES).filter_map(|ev| match ev {
        Event::Start(Tag::Image { dest_url, .. }) if dest_url.ends_with(".svg") => {
            in_svg_image = true;
            let svg = std::fs::read_to_string(dir.join(dest_url.as_ref()))
                .map(|s| match s.find("<svg") {
                    Some(at) => s[at..].to_string(),
                    None => s,
                })
                .unwrap_or_else(|e| format!("<p>({dest_url}: {e})</p>"));
            Some(Event::Html(format!("<figure>{svg}</figure>").into()))
        }
        // The image's alt text and end: dropped once the SVG itself is inline.
        Event::End(TagEnd::Image) if in_svg_image => {
            in_svg_image = false;
            None
        }
        _ if in_svg_image => None,
        other => Some(other),
    });
    let mut body = String::new();
    html::push_html(&mut body, events);
    format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ember-lab report</title>\
         <style>{STYLE}</style></head><body>\n{body}</body></html>\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inlines_svgs_and_renders_tables() {
        let dir = std::env::temp_dir().join(format!("ember-lab-html-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("c.svg"),
            "<?xml version=\"1.0\"?>\n<svg id=\"c\"></svg>",
        )
        .unwrap();
        let md = "# r\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n![chart c](c.svg)\n\n[trace](t.json)\n";
        let page = render(md, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        assert!(page.contains("<table>"), "{page}");
        assert!(page.contains("<svg id=\"c\"></svg>"), "{page}");
        assert!(!page.contains("<img"), "{page}");
        assert!(!page.contains("<?xml"), "{page}");
        assert!(page.contains("href=\"t.json\""), "{page}");
    }
}
