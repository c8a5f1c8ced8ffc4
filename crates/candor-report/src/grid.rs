//! Aligned text tables and Markdown tables from rows of cells. Widths count characters, not
//! bytes, so "±" and "µs" line up.

/// How a column's cells are aligned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table: headers, one alignment per column, rows of cells (short rows are padded).
#[derive(Clone, Debug, Default)]
pub struct Grid {
    pub headers: Vec<String>,
    pub aligns: Vec<Align>,
    pub rows: Vec<Vec<String>>,
}

impl Grid {
    pub fn new(columns: &[(&str, Align)]) -> Grid {
        Grid {
            headers: columns.iter().map(|(h, _)| h.to_string()).collect(),
            aligns: columns.iter().map(|(_, a)| *a).collect(),
            rows: Vec::new(),
        }
    }

    pub fn push(&mut self, row: Vec<String>) {
        self.rows.push(row);
    }

    fn cell<'a>(&self, row: &'a [String], i: usize) -> &'a str {
        row.get(i).map(|s| s.as_str()).unwrap_or("")
    }

    fn widths(&self) -> Vec<usize> {
        (0..self.headers.len())
            .map(|i| {
                self.rows
                    .iter()
                    .map(|r| self.cell(r, i).chars().count())
                    .chain(std::iter::once(self.headers[i].chars().count()))
                    .max()
                    .unwrap_or(0)
            })
            .collect()
    }

    /// Plain text: two spaces between columns, a rule under the header, no trailing spaces.
    pub fn to_text(&self) -> String {
        let w = self.widths();
        let mut out = String::new();
        let line = |cells: &[String], out: &mut String| {
            let mut s = String::new();
            for (i, width) in w.iter().enumerate() {
                let c = cells.get(i).map(|s| s.as_str()).unwrap_or("");
                let pad = width.saturating_sub(c.chars().count());
                if i > 0 {
                    s.push_str("  ");
                }
                match self.aligns.get(i).copied().unwrap_or(Align::Left) {
                    Align::Left => {
                        s.push_str(c);
                        s.push_str(&" ".repeat(pad));
                    }
                    Align::Right => {
                        s.push_str(&" ".repeat(pad));
                        s.push_str(c);
                    }
                }
            }
            out.push_str(s.trim_end());
            out.push('\n');
        };
        line(&self.headers, &mut out);
        let rule: Vec<String> = w.iter().map(|n| "-".repeat(*n)).collect();
        out.push_str(&rule.join("  "));
        out.push('\n');
        for r in &self.rows {
            line(r, &mut out);
        }
        out
    }

    /// An HTML table (class "res"); a row with only its first cell is a group heading.
    pub fn to_html(&self) -> String {
        let esc = |s: &str| {
            s.replace('&', "&amp;")
                .replace('<', "&lt;")
                .replace('>', "&gt;")
        };
        let class = |i: usize| match self.aligns.get(i) {
            Some(Align::Left) | None => " class=\"l\"",
            Some(Align::Right) => "",
        };
        let mut out = String::from("<table class=\"res\"><tr>");
        for (i, h) in self.headers.iter().enumerate() {
            out.push_str(&format!("<th{}>{}</th>", class(i), esc(h)));
        }
        out.push_str("</tr>");
        for r in &self.rows {
            if r.len() == 1 {
                out.push_str(&format!(
                    "<tr><th class=\"l\" colspan=\"{}\">{}</th></tr>",
                    self.headers.len(),
                    esc(r[0].trim())
                ));
                continue;
            }
            out.push_str("<tr>");
            for i in 0..self.headers.len() {
                let c = self.cell(r, i);
                // Leading spaces indent text cells; keep them visible.
                let indent = c.len() - c.trim_start().len();
                out.push_str(&format!(
                    "<td{}>{}{}</td>",
                    class(i),
                    "&nbsp;".repeat(indent),
                    esc(c.trim_start())
                ));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        out
    }

    /// A GitHub-flavoured Markdown table (every cell's Markdown escaped: `escape::md`).
    pub fn to_markdown(&self) -> String {
        let esc = |s: &str| crate::escape::md(s);
        let mut out = String::new();
        out.push_str("| ");
        out.push_str(
            &self
                .headers
                .iter()
                .map(|h| esc(h))
                .collect::<Vec<_>>()
                .join(" | "),
        );
        out.push_str(" |\n|");
        for a in &self.aligns {
            out.push_str(match a {
                Align::Left => "---|",
                Align::Right => "---:|",
            });
        }
        out.push('\n');
        for r in &self.rows {
            out.push_str("| ");
            let cells: Vec<String> = (0..self.headers.len())
                .map(|i| esc(self.cell(r, i)))
                .collect();
            out.push_str(&cells.join(" | "));
            out.push_str(" |\n");
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_by_characters() {
        let mut g = Grid::new(&[("test", Align::Left), ("MB/s", Align::Right)]);
        g.push(vec!["read".into(), "512 ± 3".into()]);
        g.push(vec!["randwrite".into(), "1.20".into()]);
        assert_eq!(
            g.to_text(),
            "test          MB/s\n---------  -------\nread       512 ± 3\nrandwrite     1.20\n"
        );
        assert_eq!(
            g.to_markdown(),
            "| test | MB/s |\n|---|---:|\n| read | 512 ± 3 |\n| randwrite | 1.20 |\n"
        );
    }
}
