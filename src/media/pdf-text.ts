import { extractText, getDocumentProxy } from "unpdf";

/**
 * The text of a PDF's pages, joined, for a model that cannot take the file itself. Throws for
 * bytes that are not a readable PDF; a PDF of scanned pages has no text and gives "".
 */
export async function pdfText(bytes: Uint8Array): Promise<string> {
  // pdf.js takes ownership of the buffer it is given, so it gets a copy; verbosity 0: errors only.
  const pdf = await getDocumentProxy(bytes.slice(), { verbosity: 0 });
  const { text } = await extractText(pdf, { mergePages: true });
  return text.trim();
}
